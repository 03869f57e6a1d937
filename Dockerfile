# The berth image: a static berth binary on distroless, run as a non-root user. The
# berth-controller chart (charts/berth-controller) runs it as `berth controller`.
#
#   docker build --build-arg VERSION=v0.1.0 -t ghcr.io/berthdev/berth:0.1.0 .

FROM golang:1.26 AS build
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api ./api
COPY cmd ./cmd
COPY internal ./internal
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/berthdev/berth/internal/version.Version=${VERSION}" \
      -o /out/berth ./cmd/berth

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/berth /usr/local/bin/berth
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/berth"]
