# Build: docker build -t tfjob-operator:latest .
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin tfjob-operator \
 && cp target/release/tfjob-operator /tfjob-operator

# Runtime: glibc only (TLS is rustls), no shell, non-root.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /tfjob-operator /usr/local/bin/tfjob-operator
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/tfjob-operator"]
CMD ["run"]
