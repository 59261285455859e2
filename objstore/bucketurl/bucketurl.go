// Package bucketurl turns a table or lake location into a Bucket: "file:///abs/path", a bare
// path (relative paths are resolved against the working directory), or "s3://bucket/prefix"
// ("s3a://" is accepted as Spark spells it). The returned bucket is rooted at the path or prefix.
//
// It holds no state; crash guarantees are those of the backend it opens (objstore/file,
// objstore/s3).
package bucketurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/s3"
)

// ErrUnsupported reports a URL scheme no backend handles.
var ErrUnsupported = errors.New("bucketurl: unsupported location")

// Options carries S3 settings that override the AWS conventions; unset fields fall back to the
// environment (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_PROFILE, instance roles ...).
type Options struct {
	Endpoint string
	Region   string
	// PathStyle forces path-style (true) or virtual-hosted (false) addressing. Unset, it is
	// path-style exactly when a custom endpoint is configured, since MinIO and LocalStack need it.
	PathStyle       *bool
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// Getenv reads the environment (os.Getenv when nil); tests pass a map lookup.
	Getenv func(string) string
	// ReadOnly opens a file location without creating anything (not the directory, not the
	// backend's temp directory) and refuses writes; a missing directory is an error. S3 opens
	// create nothing either way.
	ReadOnly bool
}

// Location is a parsed URL.
type Location struct {
	// Scheme is "file" or "s3".
	Scheme string
	// Path is the absolute directory of a file location.
	Path string
	// Bucket and Prefix locate an S3 location; Prefix has no leading or trailing slash.
	Bucket string
	Prefix string
}

// String renders the location in its canonical URL form.
func (l Location) String() string {
	if l.Scheme == "s3" {
		if l.Prefix == "" {
			return "s3://" + l.Bucket
		}
		return "s3://" + l.Bucket + "/" + l.Prefix
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(l.Path)}).String()
}

// Parse checks rawURL and resolves a relative path against the working directory.
func Parse(rawURL string) (Location, error) {
	if strings.TrimSpace(rawURL) == "" {
		return Location{}, errors.New("bucketurl: empty location")
	}
	if !strings.Contains(rawURL, "://") {
		if strings.HasPrefix(rawURL, "file:") {
			return Location{}, fmt.Errorf("bucketurl: %q: a file URL needs an absolute path (file:///abs/path)", rawURL)
		}
		abs, err := filepath.Abs(rawURL)
		if err != nil {
			return Location{}, fmt.Errorf("bucketurl: resolve %q: %w", rawURL, err)
		}
		return Location{Scheme: "file", Path: abs}, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return Location{}, fmt.Errorf("bucketurl: %q: %w", rawURL, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "file" && scheme != "s3" && scheme != "s3a" {
		return Location{}, fmt.Errorf("%w: scheme %q in %q (want file://, s3:// or a path)", ErrUnsupported, u.Scheme, rawURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Location{}, fmt.Errorf("bucketurl: %q: query, fragment and user info are not supported", rawURL)
	}
	switch scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("bucketurl: %q: file URLs on another host (%q) are not supported", rawURL, u.Host)
		}
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return Location{}, fmt.Errorf("bucketurl: %q: a file URL needs an absolute path (file:///abs/path)", rawURL)
		}
		return Location{Scheme: "file", Path: filepath.Clean(filepath.FromSlash(u.Path))}, nil
	default: // s3, s3a
		if u.Host == "" {
			return Location{}, fmt.Errorf("bucketurl: %q: no bucket name (s3://bucket/prefix)", rawURL)
		}
		if u.Port() != "" || strings.ContainsAny(u.Host, "_ ") || strings.ToLower(u.Host) != u.Host {
			return Location{}, fmt.Errorf("bucketurl: %q: %q is not a valid bucket name", rawURL, u.Host)
		}
		prefix := strings.Trim(u.Path, "/")
		if prefix != "" {
			if err := objstore.ValidateKey(prefix); err != nil {
				return Location{}, fmt.Errorf("bucketurl: %q: prefix: %w", rawURL, err)
			}
		}
		return Location{Scheme: "s3", Bucket: u.Host, Prefix: prefix}, nil
	}
}

// Open parses rawURL and opens the bucket rooted there. A file location is created if missing,
// unless opts.ReadOnly.
func Open(ctx context.Context, rawURL string, opts Options) (objstore.Bucket, error) {
	loc, err := Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if loc.Scheme == "file" {
		open := file.New
		if opts.ReadOnly {
			open = file.OpenReadOnly
		}
		b, err := open(loc.Path)
		if err != nil {
			return nil, fmt.Errorf("bucketurl: open %s: %w", loc, err)
		}
		return b, nil
	}
	b, err := s3.New(ctx, opts.S3Config(loc))
	if err != nil {
		return nil, fmt.Errorf("bucketurl: open %s: %w", loc, err)
	}
	return b, nil
}

// S3Config returns the backend settings Open uses for an S3 location, after the environment
// fallbacks, so callers can log the effective configuration (it holds secrets when given).
func (o Options) S3Config(loc Location) s3.Config {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	or := func(v, env string) string {
		if v != "" {
			return v
		}
		return getenv(env)
	}
	endpoint := or(o.Endpoint, "AWS_ENDPOINT_URL_S3")
	endpoint = or(endpoint, "AWS_ENDPOINT_URL")
	pathStyle := endpoint != ""
	if o.PathStyle != nil {
		pathStyle = *o.PathStyle
	}
	cfg := s3.Config{
		Bucket:    loc.Bucket,
		Prefix:    loc.Prefix,
		Endpoint:  endpoint,
		Region:    or(o.Region, "AWS_REGION"),
		PathStyle: pathStyle,
	}
	if cfg.Region == "" {
		cfg.Region = getenv("AWS_DEFAULT_REGION")
	}
	// Static keys only when given explicitly; otherwise the SDK's chain reads AWS_ACCESS_KEY_ID
	// and friends itself, along with profiles and roles.
	if o.AccessKeyID != "" {
		cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken = o.AccessKeyID, o.SecretAccessKey, o.SessionToken
	}
	return cfg
}
