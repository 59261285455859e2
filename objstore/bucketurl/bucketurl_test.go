package bucketurl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/bucketurl"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/s3"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

func TestParse(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in      string
		want    bucketurl.Location
		wantErr string // substring of the error; "" means success
	}{
		{in: "file:///var/lake", want: bucketurl.Location{Scheme: "file", Path: "/var/lake"}},
		{in: "file:///var/lake/", want: bucketurl.Location{Scheme: "file", Path: "/var/lake"}},
		{in: "file://localhost/var/lake", want: bucketurl.Location{Scheme: "file", Path: "/var/lake"}},
		{in: "FILE:///var/lake", want: bucketurl.Location{Scheme: "file", Path: "/var/lake"}},
		{in: "file:///with%20space", want: bucketurl.Location{Scheme: "file", Path: "/with space"}},
		{in: "/abs/lake", want: bucketurl.Location{Scheme: "file", Path: "/abs/lake"}},
		{in: "lake", want: bucketurl.Location{Scheme: "file", Path: filepath.Join(cwd, "lake")}},
		{in: "./a/../lake", want: bucketurl.Location{Scheme: "file", Path: filepath.Join(cwd, "lake")}},
		{in: "s3://lake", want: bucketurl.Location{Scheme: "s3", Bucket: "lake"}},
		{in: "s3://lake/", want: bucketurl.Location{Scheme: "s3", Bucket: "lake"}},
		{in: "s3://lake/tables/events", want: bucketurl.Location{Scheme: "s3", Bucket: "lake", Prefix: "tables/events"}},
		{in: "s3://lake/tables/events/", want: bucketurl.Location{Scheme: "s3", Bucket: "lake", Prefix: "tables/events"}},
		{in: "s3a://my.lake-1/gold", want: bucketurl.Location{Scheme: "s3", Bucket: "my.lake-1", Prefix: "gold"}},
		{in: "", wantErr: "empty location"},
		{in: "s3://", wantErr: "no bucket name"},
		{in: "s3:///prefix", wantErr: "no bucket name"},
		{in: "s3://Lake/x", wantErr: "not a valid bucket name"},
		{in: "s3://lake:9000/x", wantErr: "not a valid bucket name"},
		{in: "s3://lake/a/../b", wantErr: "prefix"},
		{in: "s3://lake/a//b", wantErr: "prefix"},
		{in: "s3://lake/x?versionId=1", wantErr: "query"},
		{in: "gs://lake/x", wantErr: `scheme "gs"`},
		{in: "abfss://c@acct.dfs.core.windows.net/x", wantErr: "unsupported"},
		{in: "http://127.0.0.1:9000/lake", wantErr: `scheme "http"`},
		{in: "file://otherhost/lake", wantErr: "another host"},
		{in: "file:relative", wantErr: "absolute path"},
		{in: "file://", wantErr: "absolute path"},
	}
	for _, tc := range tests {
		got, err := bucketurl.Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) = %+v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if _, err := bucketurl.Parse("gs://x/y"); !errors.Is(err, bucketurl.ErrUnsupported) {
		t.Errorf("unsupported scheme error %v is not ErrUnsupported", err)
	}
}

func TestLocationStringRoundTrips(t *testing.T) {
	for _, in := range []string{"file:///var/lake", "s3://lake", "s3://lake/tables/events", "file:///with%20space"} {
		loc, err := bucketurl.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := loc.String(); got != in {
			t.Errorf("Parse(%q).String() = %q", in, got)
		}
	}
}

func TestS3ConfigFallbacks(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	yes, no := true, false
	loc := bucketurl.Location{Scheme: "s3", Bucket: "lake", Prefix: "p"}
	tests := []struct {
		name string
		opts bucketurl.Options
		want s3.Config
	}{
		{"AWS defaults", bucketurl.Options{Getenv: env(nil)},
			s3.Config{Bucket: "lake", Prefix: "p"}},
		{"environment", bucketurl.Options{Getenv: env(map[string]string{"AWS_ENDPOINT_URL": "http://m:9000", "AWS_REGION": "eu-west-1"})},
			s3.Config{Bucket: "lake", Prefix: "p", Endpoint: "http://m:9000", Region: "eu-west-1", PathStyle: true}},
		{"S3-specific endpoint wins", bucketurl.Options{Getenv: env(map[string]string{"AWS_ENDPOINT_URL": "http://a", "AWS_ENDPOINT_URL_S3": "http://s3only", "AWS_DEFAULT_REGION": "us-west-2"})},
			s3.Config{Bucket: "lake", Prefix: "p", Endpoint: "http://s3only", Region: "us-west-2", PathStyle: true}},
		{"options override environment", bucketurl.Options{Endpoint: "http://cfg", Region: "r", PathStyle: &no, AccessKeyID: "k", SecretAccessKey: "s",
			Getenv: env(map[string]string{"AWS_ENDPOINT_URL": "http://env", "AWS_REGION": "envr"})},
			s3.Config{Bucket: "lake", Prefix: "p", Endpoint: "http://cfg", Region: "r", AccessKeyID: "k", SecretAccessKey: "s"}},
		{"path style forced on AWS", bucketurl.Options{PathStyle: &yes, Getenv: env(nil)},
			s3.Config{Bucket: "lake", Prefix: "p", PathStyle: true}},
	}
	for _, tc := range tests {
		if got := tc.opts.S3Config(loc); got != tc.want {
			t.Errorf("%s: S3Config = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestOpenRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := context.Background()
	b, err := bucketurl.Open(ctx, "lake/tables", bucketurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.(*file.Bucket).Close()
	if err := objstore.PutBytes(ctx, b, "events/_delta_log/00000000000000000000.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lake", "tables", "events", "_delta_log", "00000000000000000000.json")); err != nil {
		t.Errorf("object not under the resolved directory: %v", err)
	}
	b2, err := bucketurl.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(dir, "lake")), bucketurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.(*file.Bucket).Close()
	if data, err := objstore.ReadAll(ctx, b2, "tables/events/_delta_log/00000000000000000000.json"); err != nil || string(data) != "{}" {
		t.Errorf("file:// URL of the parent reads %q, %v", data, err)
	}
}

func TestOpenS3(t *testing.T) {
	ctx := context.Background()
	base := s3test.NewTestBucket(t)
	cfg, _ := s3test.Config(t)
	b, err := bucketurl.Open(ctx, "s3://"+base.Name()+"/lake/gold", bucketurl.Options{
		Endpoint: cfg.Endpoint, Region: cfg.Region, AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytesIfAbsent(ctx, b, "events_5m/_delta_log/00000000000000000000.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Stat(ctx, "lake/gold/events_5m/_delta_log/00000000000000000000.json"); err != nil {
		t.Errorf("object not under the URL's prefix: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{"file:///var/lake", "lake", "s3://lake/p", "s3a://b", "gs://x", "s3://a/../b", "file://h/x", "%zz://", "s3://b/p?x=1", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		loc, err := bucketurl.Parse(in)
		if err != nil {
			return
		}
		switch loc.Scheme {
		case "file":
			if !filepath.IsAbs(loc.Path) {
				t.Errorf("Parse(%q) gave a relative path %q", in, loc.Path)
			}
		case "s3":
			if loc.Bucket == "" {
				t.Errorf("Parse(%q) gave no bucket", in)
			}
			if loc.Prefix != "" && objstore.ValidateKey(loc.Prefix) != nil {
				t.Errorf("Parse(%q) gave an invalid prefix %q", in, loc.Prefix)
			}
		default:
			t.Errorf("Parse(%q) gave scheme %q", in, loc.Scheme)
		}
	})
}
