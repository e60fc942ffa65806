# porthole: a static binary on a distroless base, running as non-root.
# Build: docker build -t porthole .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/porthole ./cmd/porthole

# distroless/static has no shell and no package manager; nonroot is uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/porthole /porthole
USER 65532:65532
# The MCP listener. Bind beyond loopback inside the container; publish it
# only behind your ingress.
ENV PORTHOLE_ADDR=0.0.0.0:8082
EXPOSE 8082
ENTRYPOINT ["/porthole"]
CMD ["serve"]
