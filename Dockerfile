# Build and push (docker, podman or buildah; see docs/install.md, "The image"):
#   ENGINE=docker IMAGE=registry.example.com/you/tfjob-operator:0.1.0
#   $ENGINE build -t $IMAGE . && $ENGINE push $IMAGE
#
# RUNTIME_BASE: the image the operator runs on (glibc, CA certificates, a non-root user 65532);
# `--build-arg RUNTIME_BASE=...` for a mirror of it. testcluster/images/build passes a base made
# on the machine and the binary it built as the `build` stage (`--build-context build=DIR`,
# which replaces the stage of that name), so the runtime stage below is what runs in its tests.
ARG RUNTIME_BASE=gcr.io/distroless/cc-debian12:nonroot

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --features jemalloc --bin tfjob-operator \
 && cp target/release/tfjob-operator /tfjob-operator

# Runtime: glibc only (TLS is rustls), no shell, non-root.
FROM ${RUNTIME_BASE}
COPY --from=build /tfjob-operator /usr/local/bin/tfjob-operator
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/tfjob-operator"]
CMD ["run"]
