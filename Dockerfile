# porthole: a static binary on a distroless base, running as non-root, with
# nothing else in the image: no shell, no package manager. The root
# filesystem can be mounted read-only: porthole writes only its audit log,
# to a path you mount (PORTHOLE_AUDIT_LOG), or to stderr.
#
#   docker build -t porthole:0.1.0 --build-arg VERSION=0.1.0 \
#     --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg COMMIT_TIME="$(git log -1 --format=%cI)" .
#
# The version, commit and commit time are stamped into the binary (porthole
# version) as `make binary` stamps them, and the commit and version into the
# image's OCI labels.
#
# A test (cmd/porthole/dockerfile_test.go) builds the binary with the same
# command as the build stage below, checks that it is the same bytes as the
# release's linux/amd64 binary of the same commit (make binary; the release
# image, which make release builds without a Docker engine, holds that
# binary), and checks the stages and the user.
#
# The base images are named by tag: the machines this project is built
# and tested on reach no container registry to look their digests up.
# Where one is reachable, pin them by digest (README, Building an image
# with Docker).

FROM golang:1.26.11-bookworm AS build
# The Go every build of porthole runs (the Makefile's GO_TOOLCHAIN): the
# go command fetches it if the image's own is another.
ENV GOTOOLCHAIN=go1.26.11
ARG VERSION=dev
ARG REVISION=
ARG COMMIT_TIME=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${REVISION} -X main.commitTime=${COMMIT_TIME} -X main.modified=" -o /out/porthole ./cmd/porthole

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.title="porthole" \
      org.opencontainers.image.source="https://github.com/porthole-dev/porthole" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/porthole /porthole
USER 65532:65532
# Inside the container the listeners bind every interface; what reaches
# them is the orchestrator's business. Name the public host in
# PORTHOLE_ALLOWED_HOSTS: other Host headers get 403.
ENV PORTHOLE_ADDR=0.0.0.0:8082 \
    PORTHOLE_ADMIN_ADDR=0.0.0.0:9090
# 8082: MCP (POST /mcp, bearer tokens). 9090: admin (/healthz, /readyz,
# /metrics; no token: keep it on the cluster network).
EXPOSE 8082 9090
ENTRYPOINT ["/porthole"]
CMD ["serve"]
