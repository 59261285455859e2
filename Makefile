# `make test` is the project's test command: the README names it and .ci/run calls it. It runs
# the interop suite and, at the same time, `make check` then the Go tests of both modules under
# -race (each waits on servers, JVMs and child processes for part of its run: side by side, one
# fills the other's waits); every step runs to its end even when another fails.
# `make test-quick` is the inner loop: the main module's tests without -race, in -short mode,
# without MinIO, Kafka, the tests/ module, the browser or the interop suite (see docs/testing.md).
GO ?= go
# The Go packages of the two modules: the main one, and tests/ (a module of its own, so that the
# test-only dependencies such as chromedp and compose-go stay out of the main go.mod). TEST_PKGS
# is resolved inside tests/; set it empty to leave that module out of a focused run.
PKGS ?= ./...
TEST_PKGS ?= ./...
QUICK_PKGS ?= ./...

.PHONY: test test-quick check fmt-check vet mod-check arrows staticcheck go-test go-test-main go-test-tests interop deps minio kafka build bench fuzz

# The interop suite is the longest step and mostly waits (JVM starts, Spark's micro-batches, child
# processes), so it starts at once, beside `check`; the Go tests start when `check` is done (two
# steps at a time: the Go tests and the checks each keep both cores busy). -O keeps each step's
# output in one block (printed when it ends), so pytest's progress and the go test lines do not
# interleave.
test: deps
	$(MAKE) --no-print-directory -k -j2 -O interop check go-test

# The inner loop: seconds to a few minutes, not the full run. No -race, -short (the 1M-event
# reproductions skip), no servers (the S3 and Kafka tests skip unless MEDALLION_TEST_S3_ENDPOINT
# or MEDALLION_TEST_KAFKA_BROKERS is already set), no tests/ module, no interop suite.
test-quick: arrows
	env -u CI -u MEDALLION_REQUIRE_S3 -u MEDALLION_REQUIRE_KAFKA -u MEDALLION_REQUIRE_BROWSER \
	  $(GO) test -short -count=1 $(QUICK_PKGS)

# Everything the tests need that Go does not fetch: the pinned MinIO server, the pinned Kafka
# broker's jars, and Chromium for the status page test. Each script is a no-op when its tool is
# already there.
deps:
	scripts/minio.sh install
	scripts/kafka.sh install
	scripts/browser.sh install

check: fmt-check vet mod-check arrows staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	if [ -n "$(TEST_PKGS)" ]; then cd tests && $(GO) vet $(TEST_PKGS); fi

# Both go.mod files are tidy, and the test-only dependencies stay in tests/go.mod.
mod-check:
	$(GO) mod tidy -diff
	cd tests && $(GO) mod tidy -diff
	@if grep -nE 'chromedp|compose-go|k8s.io/|prometheus-operator' go.mod; then echo "go.mod: test-only dependencies belong in tests/go.mod"; exit 1; fi

# staticcheck, pinned; `go run pkg@version` builds it once into the Go caches, so a fresh clone
# needs nothing installed by hand. staticcheck.conf says which findings are kept, and why.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

staticcheck:
	$(STATICCHECK) $(PKGS)
	if [ -n "$(TEST_PKGS)" ]; then cd tests && $(STATICCHECK) $(TEST_PKGS); fi

# The import arrows of DESIGN.md §1: no package imports one below it (internal/archtest holds
# the table). go-test runs it too; here it gives the answer in seconds.
arrows:
	$(GO) test -count=1 -run '^(TestImportArrows|TestRankOf)$$' ./internal/archtest

# Tests that count allocations: the race detector adds its own, so go-test runs them again
# without it (under -race they skip).
ALLOC_TESTS = TestStateBufferSizedOnce|TestEmitGrowsOutOnce

# The Go tests, with a real MinIO server (pinned, built from the Go module proxy, started on a free
# loopback port and always stopped) for every test that touches S3, and a real Kafka broker
# (pinned jars from Maven Central, KRaft, free loopback ports, always stopped) for the Kafka tests.
# Both modules run under one of each, at the same time (every test makes its own bucket, topic and
# lake, as the packages of one module already running side by side do); each runs to its end
# whatever the other does. The packages in SLOW_PKGS are named first: go test starts packages in
# the order given, so the longest start at once instead of running alone at the end.
SLOW_PKGS = ./late ./stream ./table ./cmd/medallion ./bronze ./txlog ./objstore/s3 ./jobs ./gold
go-test:
	MEDALLION_REQUIRE_S3=1 MEDALLION_REQUIRE_BROWSER=1 MEDALLION_REQUIRE_KAFKA=1 \
	scripts/minio.sh run -- scripts/kafka.sh run -- sh -c '\
	  MAKEFLAGS= $(MAKE) --no-print-directory -k -j2 -O go-test-main go-test-tests'

# How go-test builds the test binaries (docs/testing.md, "The Go tests' CPU"):
# -race, which also turns on the compiler's checkptr instrumentation (unsafe.Pointer rules)
# in every package but the runtime. Our packages keep it (the hash tables and row encodings use
# unsafe); the standard library and the dependencies are compiled without it: a check of their
# own code, not ours, that costs about a tenth of a reflect- or Parquet-heavy test's CPU. (With
# several -gcflags, the last pattern a package matches wins.) Changing these flags recompiles the
# standard library and the dependencies once (about 120 CPU s), then the build cache has them.
# -vet=off: `make check` runs go vet with every analyzer go test would run, over the same
# packages and their test files, in the same `make test`; go test running a second vet of each
# changed package is work done twice (about 25 CPU s when every package changed). Only the
# three `//go:build race` files, one constant each, are vetted by go test alone.
RACE_TEST_FLAGS = -race -vet=off -gcflags=all=-d=checkptr=0 -gcflags=github.com/medallion-lake/medallion/...=-d=checkptr=1

# The two halves of go-test; run alone, they need the servers go-test starts. The timeout only
# catches a hang: on a machine loaded by other work (load 30 on 2 cores) the late package alone
# ran past 30 minutes, so a tighter one fails a healthy run there.
go-test-main:
	rc=0; \
	$(GO) test $(RACE_TEST_FLAGS) -count=1 -timeout 40m $(if $(filter ./...,$(PKGS)),$(SLOW_PKGS)) $(PKGS) || rc=1; \
	$(GO) test -count=1 -run "$(ALLOC_TESTS)" ./gold/ || rc=1; \
	exit $$rc

go-test-tests:
	if [ -n "$(TEST_PKGS)" ]; then cd tests && $(GO) test $(RACE_TEST_FLAGS) -count=1 -timeout 40m $(TEST_PKGS); fi

# The interop suite: delta-rs and Spark (pinned, installed into a cached virtualenv by the script)
# read our tables, we read theirs. It starts its own MinIO.
# It mostly waits on Spark's per-batch latency and child processes (a full run keeps less than
# one core busy), so two pytest-xdist workers run its modules side by side, each module whole
# in one worker (--dist loadfile: a module's fixtures are built once), the longest modules first
# (--no-loadscope-reorder keeps conftest's SLOW_MODULES_FIRST order; xdist's default orders by
# test count). INTEROP_WORKERS=0 runs it in one process.
# INTEROP_ARGS goes to pytest, e.g. INTEROP_ARGS='-k minio' for a focused run.
# medallion and the test programs of tests/interop/cmd are built here, once, in two `go build`s
# (MEDALLION_BIN, MEDALLION_INTEROP_BIN_DIR), not by the fixtures once per xdist worker and
# program: 12.2 -> 7.8 CPU s of go build with a warm build cache (docs/testing.md).
INTEROP_WORKERS ?= 2
interop:
	bin=$$(mktemp -d "$${TMPDIR:-/tmp}/medallion-interop-bin.XXXXXX") && \
	$(GO) build -o "$$bin/" ./cmd/medallion && (cd tests && $(GO) build -o "$$bin/" ./interop/cmd/...) && \
	MEDALLION_BIN="$${MEDALLION_BIN:-$$bin/medallion}" MEDALLION_INTEROP_BIN_DIR="$$bin" \
	  scripts/interop.sh run --with-medallion $(if $(filter-out 0,$(INTEROP_WORKERS)),-n $(INTEROP_WORKERS) --dist loadfile --no-loadscope-reorder) $(INTEROP_ARGS); \
	rc=$$?; rm -rf "$$bin"; exit $$rc

minio:
	scripts/minio.sh install

kafka:
	scripts/kafka.sh install

build:
	$(GO) build -o medallion ./cmd/medallion

bench:
	scripts/minio.sh run -- scripts/kafka.sh run -- $(GO) test -run '^$$' -bench . -benchmem $(PKGS)
