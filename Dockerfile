# medallion, built from source; the image runs `medallion serve` (see docker-compose.yml).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/medallion ./cmd/medallion

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/medallion /usr/local/bin/medallion
# distroless's nonroot user, by number: Kubernetes' runAsNonRoot can verify only a numeric user
# (deploy/k8s runs as the same one; tests/deploy checks that the two agree).
USER 65532:65532
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/medallion"]
CMD ["serve", "--config", "/etc/medallion/pipeline.yaml"]
