# Build and push (docker, podman or buildah; see README.md, "On a real cluster"):
#   ENGINE=docker IMAGE=registry.example.com/you/tfjob-operator:0.1.0
#   $ENGINE build -t $IMAGE . && $ENGINE push $IMAGE
#
# RUNTIME_BASE: the image the operator runs on (glibc, CA certificates, a non-root user 65532).
# BINARY_FROM: the stage or image whose /tfjob-operator is copied in: the `build` stage below;
# testcluster/images/build passes an image holding a binary built on the machine, and a
# locally made base, so that the runtime stage below is what runs in its tests.
ARG RUNTIME_BASE=gcr.io/distroless/cc-debian12:nonroot
ARG BINARY_FROM=build

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin tfjob-operator \
 && cp target/release/tfjob-operator /tfjob-operator

FROM ${BINARY_FROM} AS binary

# Runtime: glibc only (TLS is rustls), no shell, non-root.
FROM ${RUNTIME_BASE}
COPY --from=binary /tfjob-operator /usr/local/bin/tfjob-operator
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/tfjob-operator"]
CMD ["run"]
