# syntax=docker/dockerfile:1
# kproxy container: a static binary on a minimal base, run as a non-root user.
#   docker build -t kproxy .
#   docker run --rm -p 19092-19102:19092-19102 kproxy serve --upstream kafka:9092
# Inside the container kproxy listens on every interface (KPROXY_LISTEN below).
# Clients outside reach the broker listeners on 19093+node id, at the host
# named by --advertise (KPROXY_ADVERTISE; default 127.0.0.1, right for -p on
# the same machine). The admin server stays on loopback unless you set
# KPROXY_ADMIN=0.0.0.0:9644.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/kproxy ./cmd/kproxy

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kproxy /kproxy
USER nonroot:nonroot
ENV KPROXY_LISTEN=0.0.0.0:19092
# bootstrap listener; broker listeners for node ids 0-9 (port base = 19093);
# admin (/metrics, /healthz).
EXPOSE 19092 19093-19102 9644
ENTRYPOINT ["/kproxy"]
CMD ["serve"]
