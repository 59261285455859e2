// Package s3 is the Bucket on S3 and S3-compatible stores (AWS, MinIO, LocalStack) through
// aws-sdk-go-v2, the only data-plane client of the project.
//
// Choices that make it work on S3-compatible stores: request and response checksums only "when
// required" (since service/s3 v1.73 the SDK adds CRC32 headers that MinIO-like stores reject),
// optional path-style addressing, and put-if-absent as PutObject with If-None-Match: * whose 412
// PreconditionFailed is recognised by its error code, never its text.
//
// Crash guarantees are S3's: a PutObject is atomic (the object appears in full or not at all);
// a multipart upload (used for bodies of unknown size above Config.PartSize) is invisible until
// CompleteMultipartUpload, and a crash before that leaves only an incomplete upload, which a
// bucket lifecycle rule should abort. A put whose answer was lost (timeout, 5xx) may or may not
// have happened: PutIfAbsent of a body up to Config.PartSize (every Delta commit) resolves that
// case itself by reading the key back and comparing the bytes, so it never reports
// ErrAlreadyExists for its own earlier attempt. Larger conditional uploads (multipart) rely on
// the SDK's retries, so after a lost answer they may report ErrAlreadyExists for their own write.
package s3

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/medallion-lake/medallion/internal/backoff"
	"github.com/medallion-lake/medallion/objstore"
)

// DefaultMaxAttempts is how often one request is tried on 5xx, throttling and network errors:
// enough to ride out a MinIO restart or an S3 503 SlowDown burst of a few seconds.
const DefaultMaxAttempts = 8

// DefaultMaxBackoff caps the wait between two attempts.
const DefaultMaxBackoff = 5 * time.Second

// DefaultPartSize is the multipart part size for bodies of unknown size (and the most a Put
// buffers in memory): 16 MiB keeps 10,000 parts above 150 GiB.
const DefaultPartSize = 16 << 20

// maxSinglePut is S3's limit for one PutObject; larger bodies go up in parts.
const maxSinglePut = 5 << 30

// minPartSize is S3's lower limit for every part but the last.
const minPartSize = 5 << 20

// Config selects and authenticates a bucket. Zero values fall back to the SDK's defaults and
// the AWS environment conventions (AWS_REGION, AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, profiles,
// instance roles, ...).
type Config struct {
	// Bucket is the S3 bucket name (required).
	Bucket string
	// Prefix roots the objstore.Bucket at a folder of the S3 bucket ("lake/" or "lake").
	Prefix string
	// Endpoint is the service URL, e.g. http://127.0.0.1:9000 for MinIO. Empty: AWS (or
	// AWS_ENDPOINT_URL).
	Endpoint string
	// Region defaults to the environment, then us-east-1 (which MinIO accepts).
	Region string
	// PathStyle addresses buckets as ENDPOINT/BUCKET/KEY, which MinIO and LocalStack need.
	PathStyle bool
	// Static credentials; when AccessKeyID is empty the default credential chain is used.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// MaxAttempts per request (DefaultMaxAttempts when 0).
	MaxAttempts int
	// MaxBackoff between attempts (DefaultMaxBackoff when 0).
	MaxBackoff time.Duration
	// PartSize for multipart uploads of unknown-size bodies (DefaultPartSize when 0; at least 5 MiB).
	PartSize int64
	// HTTPClient overrides the SDK's HTTP client (optional); ResponseTimeout then does not apply.
	HTTPClient *http.Client
	// ResponseTimeout bounds the wait for a response's headers once a request is sent
	// (DefaultResponseTimeout when 0). Without it a store that took a write and never answered
	// would hang the caller forever; with it the attempt fails and is retried, and an unknown
	// commit outcome is resolved by reading the key back.
	ResponseTimeout time.Duration
}

// Bucket is an objstore.Bucket on one S3 bucket, optionally under a prefix.
type Bucket struct {
	client      *awss3.Client
	bucket      string
	prefix      string // "" or ends in "/"
	partSize    int64
	maxAttempts int
	maxBackoff  time.Duration
	// bodyOptions are the SDK options of every request that carries a body (unsignedBody on
	// a loopback endpoint).
	bodyOptions []func(*awss3.Options)
}

var _ objstore.Bucket = (*Bucket)(nil)

func (c *Config) withDefaults() Config {
	out := *c
	if out.MaxAttempts <= 0 {
		out.MaxAttempts = DefaultMaxAttempts
	}
	if out.MaxBackoff <= 0 {
		out.MaxBackoff = DefaultMaxBackoff
	}
	if out.PartSize <= 0 {
		out.PartSize = DefaultPartSize
	}
	return out
}

// NewClient builds the SDK client New uses, for callers that manage buckets themselves
// (test setup, bootstrap scripts).
func NewClient(ctx context.Context, cfg Config) (*awss3.Client, error) {
	cfg = cfg.withDefaults()
	opts := []func(*config.LoadOptions) error{
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = cfg.MaxBackoff
				// The client-side retry quota would turn a burst of 503s under load into
				// hard failures; the attempt limit and backoff are the bound we want.
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.HTTPClient == nil {
		timeout := cfg.ResponseTimeout
		if timeout <= 0 {
			timeout = DefaultResponseTimeout
		}
		opts = append(opts, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.ResponseHeaderTimeout = timeout
		})))
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	if cfg.AccessKeyID != "" {
		// Explicit credentials: the instance metadata has nothing to give.
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	opts = append(opts, config.WithLogger(quietIMDSLogger{logging.NewStandardLogger(os.Stderr)}))
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load AWS config: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	return awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// Set here rather than in LoadDefaultConfig, which refuses a plain *http.Client when
		// AWS_CA_BUNDLE is set.
		if cfg.HTTPClient != nil {
			o.HTTPClient = cfg.HTTPClient
		}
	}), nil
}

// quietIMDSLogger is the SDK's logger without its "falling back to IMDSv1" warning: without
// credentials, that WARN line (the machine's metadata address refused an IMDSv2 token) printed
// beside the command's one-line error about missing credentials, which says all there is.
type quietIMDSLogger struct{ next logging.Logger }

func (l quietIMDSLogger) Logf(c logging.Classification, format string, v ...any) {
	if strings.HasPrefix(format, "falling back to IMDSv1") {
		return
	}
	l.next.Logf(c, format, v...)
}

// DefaultResponseTimeout is the default Config.ResponseTimeout: far above a healthy store's
// time to first byte, far below "forever".
const DefaultResponseTimeout = 30 * time.Second

// New returns the bucket described by cfg. It does not contact the store.
func New(ctx context.Context, cfg Config) (*Bucket, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3: no bucket name in config")
	}
	if cfg.PartSize > 0 && cfg.PartSize < minPartSize {
		return nil, fmt.Errorf("s3: part size %d is below S3's minimum of %d", cfg.PartSize, minPartSize)
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		if err := objstore.ValidateKey(prefix); err != nil {
			return nil, fmt.Errorf("s3: prefix: %w", err)
		}
		prefix += "/"
	}
	client, err := NewClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b := &Bucket{
		client:      client,
		bucket:      cfg.Bucket,
		prefix:      prefix,
		partSize:    cfg.PartSize,
		maxAttempts: cfg.MaxAttempts,
		maxBackoff:  cfg.MaxBackoff,
	}
	if plainLoopback(cfg.Endpoint) {
		b.bodyOptions = []func(*awss3.Options){unsignedBody}
	}
	return b, nil
}

// plainLoopback reports whether endpoint is plain HTTP to this machine (a MinIO beside the
// job: the benchmarks, the tests, a sidecar on localhost).
func plainLoopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// unsignedBody sends a request's body as UNSIGNED-PAYLOAD, as the SDK itself does over
// HTTPS: without it, over plain HTTP, SigV4 hashes every body with SHA-256 before sending it,
// a second pass over every data file the job uploads (about 2% of a stream's CPU on MinIO at
// 10M events). The hash guards a body against change in transit; on loopback there is no
// transit (the bytes never leave the kernel), so it buys nothing there. Headers and the
// request line stay signed.
func unsignedBody(o *awss3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

// Name returns the S3 bucket name.
func (b *Bucket) Name() string { return b.bucket }

// Client returns the underlying SDK client.
func (b *Bucket) Client() *awss3.Client { return b.client }

func (b *Bucket) key(key string) (string, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return "", err
	}
	return b.prefix + key, nil
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var op *smithy.OperationError
	if errors.As(err, &op) {
		// A call of another service made on S3's behalf (the instance metadata or STS fetching
		// credentials) failed: its status (an IMDS 404 when the machine has no role) says
		// nothing about the key, and must not read as "object not found".
		var inner *smithy.OperationError
		if errors.As(op.Err, &inner) {
			return 0
		}
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// wrap classifies an SDK error by its code and HTTP status, never by its text.
func (b *Bucket) wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	code := errorCode(err)
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("s3: %s %s: bucket %q does not exist: %w", op, key, b.bucket, err)
	case code == "NoSuchKey" || code == "NotFound" || (code == "" && httpStatus(err) == http.StatusNotFound):
		return fmt.Errorf("s3: %s %s: %w", op, key, objstore.ErrNotFound)
	case code == "PreconditionFailed" || httpStatus(err) == http.StatusPreconditionFailed:
		return fmt.Errorf("s3: %s %s: %w", op, key, objstore.ErrAlreadyExists)
	case code == "XMinioStorageFull" || code == "XMinioAdminBucketQuotaExceeded" || httpStatus(err) == http.StatusInsufficientStorage:
		// MinIO answers a full disk with XMinioStorageFull (HTTP 507; 500 before 2021) and an
		// exhausted bucket quota with XMinioAdminBucketQuotaExceeded: nothing was stored.
		return fmt.Errorf("s3: %s %s: %w: the store is full (%s): free space or raise the bucket quota of %q and rerun: %w",
			op, key, objstore.ErrStorageFull, cmp.Or(code, "HTTP 507"), b.bucket, err)
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return fmt.Errorf("s3: %s %s: %w", op, key, objstore.ErrNotFound)
	}
	return fmt.Errorf("s3: %s %s: %w", op, key, err)
}

// Get implements objstore.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return b.GetRange(ctx, key, 0, -1)
}

// GetRange implements objstore.Bucket. S3 answers 416 for a range starting at or after the end
// (including any range of an empty object); that means the object exists, so it is an empty body.
func (b *Bucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 {
		return nil, fmt.Errorf("s3: get %s: negative offset %d", key, offset)
	}
	k, err := b.key(key)
	if err != nil {
		return nil, err
	}
	if length == 0 {
		if _, err := b.Stat(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	in := &awss3.GetObjectInput{Bucket: &b.bucket, Key: &k}
	switch {
	case length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		if errorCode(err) == "InvalidRange" || httpStatus(err) == http.StatusRequestedRangeNotSatisfiable {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		return nil, b.wrap("get", key, err)
	}
	return out.Body, nil
}

// Stat implements objstore.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	k, err := b.key(key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	out, err := b.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &b.bucket, Key: &k})
	if err != nil {
		return objstore.ObjectInfo{}, b.wrap("stat", key, err)
	}
	return objstore.ObjectInfo{
		Key:     key,
		Size:    aws.ToInt64(out.ContentLength),
		ModTime: aws.ToTime(out.LastModified),
		ETag:    strings.Trim(aws.ToString(out.ETag), `"`),
	}, nil
}

// Delete implements objstore.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	k, err := b.key(key)
	if err != nil {
		return err
	}
	_, err = b.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &b.bucket, Key: &k})
	if err != nil && !errors.Is(b.wrap("delete", key, err), objstore.ErrNotFound) {
		return b.wrap("delete", key, err)
	}
	return nil
}

// List implements objstore.Bucket with paginated ListObjectsV2; S3 returns keys in UTF-8
// binary order, which is byte order.
func (b *Bucket) List(ctx context.Context, prefix string, opts objstore.ListOptions) iter.Seq2[objstore.ObjectInfo, error] {
	return objstore.CheckPrefix(prefix, func(yield func(objstore.ObjectInfo, error) bool) {
		in := &awss3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: aws.String(b.prefix + prefix)}
		if opts.StartAfter != "" {
			in.StartAfter = aws.String(b.prefix + opts.StartAfter)
		}
		pages := awss3.NewListObjectsV2Paginator(b.client, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(objstore.ObjectInfo{}, b.wrap("list", prefix, err))
				return
			}
			for _, o := range page.Contents {
				info := objstore.ObjectInfo{
					Key:     strings.TrimPrefix(aws.ToString(o.Key), b.prefix),
					Size:    aws.ToInt64(o.Size),
					ModTime: aws.ToTime(o.LastModified),
					ETag:    strings.Trim(aws.ToString(o.ETag), `"`),
				}
				if !yield(info, nil) {
					return
				}
			}
		}
	})
}

// Put implements objstore.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return b.put(ctx, "put", key, r, size, false)
}

// PutIfAbsent implements objstore.Bucket with If-None-Match: *.
func (b *Bucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	return b.put(ctx, "put-if-absent", key, r, size, true)
}

func (b *Bucket) put(ctx context.Context, op, key string, r io.Reader, size int64, ifAbsent bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k, err := b.key(key)
	if err != nil {
		return err
	}
	// A known-size seekable body goes out as is (the SDK signs it and rewinds it on retry);
	// anything else is buffered one part at a time.
	if rs, ok := r.(io.ReadSeeker); ok && size >= 0 && size <= maxSinglePut {
		if ifAbsent && size <= b.partSize {
			body := make([]byte, size)
			if _, err := io.ReadFull(rs, body); err != nil {
				return fmt.Errorf("s3: %s %s: read the %d bytes announced: %w", op, key, size, err)
			}
			return b.putSmallIfAbsent(ctx, key, k, body)
		}
		return b.putObject(ctx, putTarget{op, key, k, ifAbsent}, rs, size)
	}
	if size >= 0 && size < b.partSize {
		// A body of known size in one buffer of that size: readPart's growing buffer copied
		// and cleared a stream's state file (up to tens of MB) about twice over.
		body, err := readExactly(r, size)
		if err != nil {
			return fmt.Errorf("s3: %s %s: %w", op, key, err)
		}
		return b.putBuffered(ctx, putTarget{op, key, k, ifAbsent}, body)
	}
	first, err := readPart(r, b.partSize)
	if err != nil {
		return fmt.Errorf("s3: %s %s: read body: %w", op, key, err)
	}
	if int64(len(first)) < b.partSize {
		if size >= 0 && int64(len(first)) != size {
			return fmt.Errorf("s3: %s %s: read %d bytes, caller announced %d", op, key, len(first), size)
		}
		return b.putBuffered(ctx, putTarget{op, key, k, ifAbsent}, first)
	}
	return b.putMultipart(ctx, putTarget{op, key, k, ifAbsent}, first, r, size)
}

// putBuffered sends a body held whole in memory in one request: a create-if-absent through
// putSmallIfAbsent, anything else as a plain PUT.
func (b *Bucket) putBuffered(ctx context.Context, t putTarget, body []byte) error {
	if t.ifAbsent {
		return b.putSmallIfAbsent(ctx, t.key, t.k, body)
	}
	return b.putObject(ctx, t, bytes.NewReader(body), int64(len(body)))
}

// readExactly reads a body announced as size bytes, and fails when r holds fewer or more.
func readExactly(r io.Reader, size int64) ([]byte, error) {
	body := make([]byte, size)
	n, err := io.ReadFull(r, body)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || (errors.Is(err, io.EOF) && size > 0):
		return nil, fmt.Errorf("read %d bytes, caller announced %d", n, size)
	case err != nil:
		return nil, fmt.Errorf("read body: %w", err)
	}
	var extra [1]byte
	switch _, err := io.ReadFull(r, extra[:]); {
	case err == nil:
		return nil, fmt.Errorf("the body holds more than the %d bytes announced", size)
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("read body: %w", err)
	}
	return body, nil
}

// readPart reads up to n bytes; fewer only at the end of r. The buffer grows with the data, so
// a small body of unknown size does not cost a whole part.
func readPart(r io.Reader, n int64) ([]byte, error) {
	var buf bytes.Buffer
	_, err := io.CopyN(&buf, r, n)
	if err == io.EOF {
		err = nil
	}
	return buf.Bytes(), err
}

// putTarget is one put: the operation's name and the caller's key (for errors), the object's
// full key k, and whether it must not exist yet.
type putTarget struct {
	op, key, k string
	ifAbsent   bool
}

func (b *Bucket) putObject(ctx context.Context, t putTarget, body io.ReadSeeker, size int64) error {
	in := &awss3.PutObjectInput{Bucket: &b.bucket, Key: &t.k, Body: body, ContentLength: aws.Int64(size)}
	if t.ifAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := b.client.PutObject(ctx, in, b.bodyOptions...)
	return b.wrap(t.op, t.key, err)
}

// putSmallIfAbsent is the commit path. It retries by itself rather than through the SDK so it
// knows when an earlier attempt may have landed: a 412 after such an attempt is compared with
// the stored bytes, and identical bytes mean the earlier attempt won (ours), not a rival.
// AWS's 409 ConditionalRequestConflict (a concurrent conditional write in flight) is retried.
func (b *Bucket) putSmallIfAbsent(ctx context.Context, key, k string, body []byte) error {
	ambiguous := false
	var lastErr error
	for attempt := range b.maxAttempts {
		if attempt > 0 {
			if err := (backoff.Backoff{Min: 100 * time.Millisecond, Max: b.maxBackoff}).Sleep(ctx, attempt); err != nil {
				return fmt.Errorf("s3: put-if-absent %s: %w (last error: %v)", key, err, lastErr)
			}
		}
		_, err := b.client.PutObject(ctx, &awss3.PutObjectInput{
			Bucket: &b.bucket, Key: &k, Body: bytes.NewReader(body),
			ContentLength: aws.Int64(int64(len(body))), IfNoneMatch: aws.String("*"),
		}, append([]func(*awss3.Options){func(o *awss3.Options) { o.RetryMaxAttempts = 1 }}, b.bodyOptions...)...)
		if err == nil {
			return nil
		}
		lastErr = err
		wrapped := b.wrap("put-if-absent", key, err)
		if errors.Is(wrapped, objstore.ErrAlreadyExists) {
			if ambiguous && b.holds(ctx, k, body) {
				return nil
			}
			return wrapped
		}
		if ctx.Err() != nil || errors.Is(wrapped, objstore.ErrStorageFull) {
			return wrapped // a full store may answer 500, which the SDK calls retryable
		}
		switch {
		case errorCode(err) == "ConditionalRequestConflict" || httpStatus(err) == http.StatusConflict:
			// Nothing was written; try again.
		case retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary:
			ambiguous = true
		default:
			return wrapped
		}
	}
	return fmt.Errorf("s3: put-if-absent %s: gave up after %d attempts: %w", key, b.maxAttempts, lastErr)
}

// holds reports whether the object k has exactly the content body.
func (b *Bucket) holds(ctx context.Context, k string, body []byte) bool {
	out, err := b.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &b.bucket, Key: &k})
	if err != nil {
		return false
	}
	defer out.Body.Close()
	got, err := io.ReadAll(io.LimitReader(out.Body, int64(len(body))+1))
	return err == nil && bytes.Equal(got, body)
}

// putMultipart uploads first and the rest of r in parts; the object appears only when the
// upload completes (with If-None-Match: * for put-if-absent). Any failure aborts the upload.
func (b *Bucket) putMultipart(ctx context.Context, t putTarget, first []byte, r io.Reader, size int64) error {
	created, err := b.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{Bucket: &b.bucket, Key: &t.k})
	if err != nil {
		return b.wrap(t.op, t.key, err)
	}
	uploadID := created.UploadId
	abort := func(err error) error {
		// A fresh context: the caller's may be the reason we are aborting.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = b.client.AbortMultipartUpload(actx, &awss3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &t.k, UploadId: uploadID})
		return err
	}
	var parts []types.CompletedPart
	total := int64(0)
	part := first
	for n := int32(1); len(part) > 0; n++ {
		out, err := b.client.UploadPart(ctx, &awss3.UploadPartInput{
			Bucket: &b.bucket, Key: &t.k, UploadId: uploadID, PartNumber: aws.Int32(n),
			Body: bytes.NewReader(part), ContentLength: aws.Int64(int64(len(part))),
		}, b.bodyOptions...)
		if err != nil {
			return abort(b.wrap(t.op, t.key, err))
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
		total += int64(len(part))
		if int64(len(part)) < b.partSize {
			break
		}
		if part, err = readPart(r, b.partSize); err != nil {
			return abort(fmt.Errorf("s3: %s %s: read body: %w", t.op, t.key, err))
		}
	}
	if size >= 0 && total != size {
		return abort(fmt.Errorf("s3: %s %s: read %d bytes, caller announced %d", t.op, t.key, total, size))
	}
	in := &awss3.CompleteMultipartUploadInput{
		Bucket: &b.bucket, Key: &t.k, UploadId: uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}
	if t.ifAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	if _, err := b.client.CompleteMultipartUpload(ctx, in); err != nil {
		return abort(b.wrap(t.op, t.key, err))
	}
	return nil
}

// Close closes the HTTP client's idle connections; requests still in flight finish.
func (b *Bucket) Close() error {
	if c, ok := b.client.Options().HTTPClient.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	return nil
}
