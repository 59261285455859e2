package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/aws/smithy-go"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/bucketurl"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// maxErrorLen caps the one line an operator reads; the whole chain is logged at debug level.
const maxErrorLen = 300

// shortError is err on one line without the SDK's chain: the context our packages add, then
// the store's error code and message (or the network error) instead of the operation, request
// and host IDs and retry details.
func shortError(err error) string {
	s := err.Error()
	var ae smithy.APIError
	var oe *net.OpError
	var cv *tls.CertificateVerificationError
	if i := strings.Index(s, "operation error "); i >= 0 {
		switch {
		case errors.As(err, &cv):
			s = s[:i] + cv.Error()
		case errors.As(err, &ae):
			s = s[:i] + ae.ErrorCode()
			if m := ae.ErrorMessage(); m != "" {
				s += ": " + m
			}
		case errors.As(err, &oe):
			s = s[:i] + oe.Error()
		case strings.Contains(s[i:], "get credentials"):
			s = s[:i] + "no credentials found"
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	// A failed expectation's message ends with the violating row, which the user needs whole
	// (silver bounds it); so do a table rule's; a refused schema or definition change, and a
	// refusal by a table feature, end with the ways out (docs/table-features.md); so do the
	// refusals of a table or bronze files gone from under a checkpoint (docs/recovery.md; the
	// missing files' list is bounded), of a data file gone from storage (one file named) and of
	// a second process running a stream (one conflict named).
	if len(s) > maxErrorLen && !errors.Is(err, silver.ErrExpectationFailed) && !errors.Is(err, bronze.ErrSchemaChange) &&
		!errors.Is(err, stream.ErrDefinitionChanged) && !errors.Is(err, stream.ErrRefreshRefused) && !errors.Is(err, table.ErrIncompatibleSchema) &&
		!errors.Is(err, txlog.ErrUnsupportedFeature) && !errors.Is(err, table.ErrRowRuleViolated) &&
		!errors.Is(err, stream.ErrBronzeFilesMissing) && !errors.Is(err, checkpoint.ErrTableBehind) && !errors.Is(err, bronze.ErrTableBehind) &&
		!errors.Is(err, table.ErrDataFileGone) && !errors.Is(err, stream.ErrConcurrentRun) {
		s = s[:maxErrorLen] + "…"
	}
	return s
}

// errorHint names the usual cause of err and what to check, or "". It matches the sentinels
// objstore exposes, the store's error codes and the network errors, never the message text,
// except for the SDK's missing-credentials error, which has no exported type.
func errorHint(err error) string {
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	switch {
	case errors.As(err, &cv) || errors.As(err, &ua):
		return "the store's TLS certificate is not trusted: point AWS_CA_BUNDLE at its CA certificate (PEM)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: is the object store running? check s3.endpoint / AWS_ENDPOINT_URL"
	case code == "NoSuchBucket":
		return "no such bucket: create it, or fix the bucket in the lake URL"
	case code == "SignatureDoesNotMatch":
		return "signature mismatch: check the secret key (AWS_SECRET_ACCESS_KEY) and s3.region"
	case code == "InvalidAccessKeyId" || code == "AccessDenied" || code == "ExpiredToken" ||
		code == "InvalidToken" || code == "Forbidden":
		return "wrong or expired credentials: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the environment, and the bucket policy"
	case strings.Contains(err.Error(), "get credentials") || strings.Contains(err.Error(), "failed to retrieve credentials"):
		return "missing credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment (the config file never holds secrets)"
	case errors.Is(err, file.ErrReadOnly):
		return ""
	case code == "NotImplemented" || errors.Is(err, objstore.ErrNotSupported):
		return "put-if-absent unsupported: the store lacks the conditional writes (If-None-Match) the Delta log needs; use S3, a recent MinIO or a local path"
	}
	return ""
}

// oneLineError is what the CLI prints for a failure: the short message, and the hint if any.
// It unwraps to the full error, so errors.Is and exit codes still see it.
type oneLineError struct{ err error }

func (e *oneLineError) Error() string {
	s := shortError(e.err)
	if h := errorHint(e.err); h != "" {
		s += " (hint: " + h + ")"
	}
	return s
}
func (e *oneLineError) Unwrap() error { return e.err }

// explainTableNotFound names the table URL in txlog.ErrTableNotFound, and says when it is a
// file (a config file?) or a lake root (tables below it) rather than a table.
func explainTableNotFound(ctx context.Context, url string, err error) error {
	if loc, perr := bucketurl.Parse(url); perr == nil && loc.Scheme == "file" {
		if info, serr := os.Stat(loc.Path); serr == nil && !info.IsDir() {
			// Exit 1 like every other path with no table there (nothing, a lake root): the
			// command line is well formed, the path holds no table (README, exit codes).
			return fmt.Errorf("%s is a file, not a table (a config file? table commands take a table URL such as LAKE/silver): %w", url, txlog.ErrTableNotFound)
		}
	}
	if !errors.Is(err, txlog.ErrTableNotFound) {
		return err
	}
	if loc, perr := bucketurl.Parse(url); perr == nil && loc.Scheme == "file" {
		if _, serr := os.Stat(loc.Path); errors.Is(serr, fs.ErrNotExist) {
			return fmt.Errorf("%s: no such directory%s: %w", url, nearbyTables(ctx, url), txlog.ErrTableNotFound)
		}
	}
	msg := fmt.Sprintf("%s: no Delta table there (no _delta_log)", url)
	if tables := tablesBelow(ctx, url); len(tables) > 0 {
		msg = fmt.Sprintf("%s is a lake root, not a table; tables below it: %s", url, strings.Join(tables, ", "))
	}
	return fmt.Errorf("%s: %w", msg, txlog.ErrTableNotFound)
}

// tablesBelow lists, read-only, the directories under url that hold a _delta_log (at most
// a few thousand keys are looked at).
func tablesBelow(ctx context.Context, url string) []string {
	b, err := bucketurl.Open(ctx, url, bucketurl.Options{ReadOnly: true})
	if err != nil {
		return nil
	}
	defer b.Close()
	var tables []string
	n := 0
	for info, err := range b.List(ctx, "", objstore.ListOptions{}) {
		if err != nil || n > 5000 {
			break
		}
		n++
		if i := strings.Index("/"+info.Key, "/_delta_log/"); i > 0 {
			t := path.Clean(info.Key[:i-1])
			if !slices.Contains(tables, t) {
				tables = append(tables, t)
			}
		}
	}
	slices.Sort(tables)
	return tables
}

// nearbyTables says which tables lie under the parent directory of a local path
// that does not exist (a mistyped table name), or "" when there are none or it is not local.
func nearbyTables(ctx context.Context, url string) string {
	loc, err := bucketurl.Parse(url)
	if err != nil || loc.Scheme != "file" {
		return ""
	}
	// Only the parent: walking further up could list a whole disk.
	dir := filepath.Dir(loc.Path)
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	tables := tablesBelow(ctx, dir)
	if len(tables) == 0 {
		return ""
	}
	return fmt.Sprintf("; tables under %s: %s", dir, strings.Join(tables, ", "))
}
