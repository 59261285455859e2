# `make test` is the project's test command: the README names it and .ci/run calls it.
GO ?= go
PKGS ?= ./...

.PHONY: test check fmt-check vet go-test minio build bench fuzz

test: check go-test

check: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# The Go tests, with a real MinIO server (pinned, built from the Go module proxy, started on a free
# loopback port and always stopped) for every test that touches S3.
go-test:
	MEDALLION_REQUIRE_S3=1 scripts/minio.sh run -- $(GO) test -race -count=1 -timeout 20m $(PKGS)

minio:
	scripts/minio.sh install

build:
	$(GO) build -o medallion ./cmd/medallion

bench:
	scripts/minio.sh run -- $(GO) test -run '^$$' -bench . -benchmem $(PKGS)
