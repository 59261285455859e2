package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestJobErrorOnce: a job that fails on an unreachable store says so once on stderr, on one
// line, with a hint, and the JSON summary on stdout carries the same short message.
func TestJobErrorOnce(t *testing.T) {
	cfg := writeGenConfig(t, "s3://nobucket/lake", "s3: {endpoint: \"http://"+freeAddr(t)+"\", region: us-east-1}\n")
	cmd := exec.Command(binary(t), "run", "ingest", "--config", cfg)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s", "AWS_MAX_ATTEMPTS=1", "AWS_ENDPOINT_URL=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != 1 {
		t.Fatalf("exit: %v, want 1\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	t.Logf("stdout %s\nstderr %s", stdout.String(), stderr.String())
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if n := strings.Count(stderr.String(), "connection refused"); n != 2 || len(lines) != 1 {
		// Once in the message, once in the hint, on a single line.
		t.Errorf("stderr has %d lines, mentions the cause %d times:\n%s", len(lines), n, stderr.String())
	}
	if !strings.Contains(stderr.String(), "(hint: connection refused: is the object store running?") {
		t.Errorf("no hint in %q", stderr.String())
	}
	if len(lines[0]) > 500 || strings.Contains(stderr.String(), "RequestID") {
		t.Errorf("the error is not short: %q", lines[0])
	}
	if stdout.Len() > 0 {
		var summary struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &summary); err != nil || summary.OK || !strings.Contains(lines[0], summary.Error) {
			t.Errorf("summary %q (%v) does not carry the stderr message %q", stdout.String(), err, lines[0])
		}
	}
}

// TestTableNotFoundSaysWhere: the message names the URL and says what it is instead.
func TestTableNotFoundSaysWhere(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "200", "--seed", "1", "--start", "now"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := runGenCLI(t, "run", "ingest", "--config", cfg); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	empty := t.TempDir()
	for _, c := range []struct {
		url, want string
		code      int
	}{
		{lake, lake + " is a lake root, not a table; tables below it: _medallion/event_log, bronze", 1},
		{empty, empty + ": no Delta table there", 1},
		// The same exit code as every other path without a table (it exited 2).
		{cfg, cfg + " is a file, not a table (a config file?", 1},
		// A mistyped table name: not the backend's "open root" chain, but the tables beside it.
		{lake + "/bronze/event", lake + "/bronze/event: no such directory; tables under " + lake + "/bronze: events, rejects", 1},
	} {
		for _, sub := range []string{"scan", "describe", "history"} {
			_, err := runGenCLI(t, "table", sub, c.url)
			code := 1
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			}
			if err == nil || code != c.code || !strings.Contains(err.Error(), c.want) || !errors.Is(err, txlog.ErrTableNotFound) {
				t.Errorf("table %s %s: %v (exit %d), want exit %d with %q", sub, c.url, err, code, c.code, c.want)
			}
		}
	}
}

// TestErrorHint matches the store's error codes and objstore's sentinels, not message text.
func TestErrorHint(t *testing.T) {
	api := func(code string) error {
		return fmt.Errorf("s3: put k: operation error S3: PutObject, https response error StatusCode: 403, RequestID: X, HostID: Y, api error %s: msg: %w",
			code, &smithy.GenericAPIError{Code: code, Message: "the message"})
	}
	for _, c := range []struct {
		err         error
		short, hint string
	}{
		{api("SignatureDoesNotMatch"), "s3: put k: SignatureDoesNotMatch: the message", "signature mismatch"},
		{api("NoSuchBucket"), "s3: put k: NoSuchBucket: the message", "no such bucket"},
		{api("InvalidAccessKeyId"), "s3: put k: InvalidAccessKeyId: the message", "wrong or expired credentials"},
		{api("NotImplemented"), "s3: put k: NotImplemented: the message", "put-if-absent"},
		{fmt.Errorf("file: put k: %w", objstore.ErrNotSupported), "file: put k: objstore: operation not supported", "put-if-absent"},
		{errors.New("two\nlines"), "two lines", ""},
		{fmt.Errorf("s3: get k: operation error S3: GetObject, exceeded maximum number of attempts, 8, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Get \"https://h/k\": %w",
			&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}),
			"s3: get k: tls: failed to verify certificate: x509: certificate signed by unknown authority", "the store's TLS certificate is not trusted"},
		{errors.New("s3: list k: operation error S3: ListObjectsV2, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found"),
			"s3: list k: no credentials found", "missing credentials"},
	} {
		if got := shortError(c.err); got != c.short {
			t.Errorf("shortError(%v) = %q, want %q", c.err, got, c.short)
		}
		if got := errorHint(c.err); !strings.HasPrefix(got, c.hint) || (c.hint == "") != (got == "") {
			t.Errorf("errorHint(%v) = %q, want %q...", c.err, got, c.hint)
		}
	}
}

// TestRecoveryErrorsKeepTheWayOut: a job that refuses to go on because a table or its files
// went away (a vacuum past the stream's position, a table behind its checkpoint) ends its
// error with the way out, which the one-line error must not cut off.
func TestRecoveryErrorsKeepTheWayOut(t *testing.T) {
	long := strings.Repeat("version 9: part-00000-bf292ed7-f5fc-4522-bc66-06766ebaab6c-c000.snappy.parquet; ", 5)
	for _, err := range []error{
		fmt.Errorf("%w: 5 files added by bronze versions 9: %s. To recover: the way out", stream.ErrBronzeFilesMissing, long),
		fmt.Errorf("stream: %w: table silver/events %s; the way out", checkpoint.ErrTableBehind, long),
		fmt.Errorf("ingest: %w: bronze/events %s; the way out", bronze.ErrTableBehind, long),
		// The stream's own refusal, whose recover command comes after the cap.
		fmt.Errorf("run stream: stream: %w; the way out", checkpoint.CheckTable("silver/events", "_checkpoints/events", "4f0c", nil, checkpoint.TableMark{Batch: 4, Version: 5})),
		// A data file gone from storage: the file and the ways out, after the cap with a long
		// gold name.
		fmt.Errorf("run merge-late: %w", table.ExplainMissing(&table.MissingFileError{Path: "part-00000-bf292ed7-f5fc-4522-bc66-06766ebaab6c-c000.snappy.parquet",
			Err: fmt.Errorf("table: read: %w", objstore.ErrNotFound)}, "late: gold "+strings.Repeat("events_by_device_", 6),
			"restore it from the bucket's versioning or a backup, or rebuild gold from silver: the way out")),
		// A second process running the stream: the conflict, after the way out, may be cut.
		fmt.Errorf("run stream: stream %s: %w events (checkpoint _checkpoints/events): the way out", long, stream.ErrConcurrentRun),
	} {
		if len(err.Error()) <= maxErrorLen {
			t.Fatalf("%v: not longer than the cap, the test shows nothing", err)
		}
		if got := shortError(err); !strings.HasSuffix(got, "the way out") {
			t.Errorf("shortError cut the way out off: %q", got)
		}
	}
}
