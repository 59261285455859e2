# medallion, built from source; the image runs `medallion serve` (see docker-compose.yml).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/medallion ./cmd/medallion

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/medallion /usr/local/bin/medallion
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/medallion"]
CMD ["serve", "--config", "/etc/medallion/pipeline.yaml"]
