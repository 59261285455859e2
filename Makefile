# `make test` is the project's test command: the README names it and .ci/run calls it.
GO ?= go
PKGS ?= ./...

.PHONY: test check fmt-check vet go-test interop deps minio build bench fuzz

test: check deps go-test interop

# Everything the tests need that Go does not fetch: the pinned MinIO server, and Chromium for the
# status page test. Each script is a no-op when its tool is already there.
deps:
	scripts/minio.sh install
	scripts/browser.sh install

check: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# The Go tests, with a real MinIO server (pinned, built from the Go module proxy, started on a free
# loopback port and always stopped) for every test that touches S3.
go-test:
	MEDALLION_REQUIRE_S3=1 MEDALLION_REQUIRE_BROWSER=1 scripts/minio.sh run -- $(GO) test -race -count=1 -timeout 20m $(PKGS)

# The interop suite: delta-rs and Spark (pinned, installed into a cached virtualenv by the script)
# read our tables, we read theirs. It starts its own MinIO.
interop:
	scripts/interop.sh run --with-medallion

minio:
	scripts/minio.sh install

build:
	$(GO) build -o medallion ./cmd/medallion

bench:
	scripts/minio.sh run -- $(GO) test -run '^$$' -bench . -benchmem $(PKGS)
