package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/s3"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/table"
)

// checkInit runs Init twice on cfg's lake: the first creates every table, empty; the second
// finds them all; then ingest and the stream run on the tables init created.
func checkInit(t *testing.T, cfg *config.Pipeline, wantBucket string) Env {
	t.Helper()
	ctx := context.Background()
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Lake.Close() })
	rep, err := Init(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	paths := TablePaths(env)
	if rep.Bucket != wantBucket || rep.PutIfAbsent != "ok" || !slices.Equal(sorted(rep.Created), sorted(paths)) || len(rep.Existing) != 0 {
		t.Fatalf("first init: %+v, want bucket %q and every table of %v created", rep, wantBucket, paths)
	}
	for _, p := range paths {
		snap, err := table.Open(objstore.WithPrefix(env.Lake, p), table.Options{}).Log().Snapshot(ctx)
		if err != nil || len(snap.Files()) != 0 {
			t.Fatalf("%s after init: %v", p, err)
		}
	}
	rep, err = Init(ctx, env)
	if err != nil || len(rep.Created) != 0 || !slices.Equal(sorted(rep.Existing), sorted(paths)) {
		t.Fatalf("second init: %+v %v", rep, err)
	}
	line := `{"event_id":"e%d","event_type":"a","amount":1,"event_time":"2024-05-01T12:0%d:00Z"}` + "\n"
	var data strings.Builder
	for i := range 5 {
		fmt.Fprintf(&data, line, i, i)
	}
	if err := objstore.PutBytes(ctx, env.Lake, "landing/events/a.json", []byte(data.String())); err != nil {
		t.Fatal(err)
	}
	if _, err := Ingest(ctx, env); err != nil {
		t.Fatal(err)
	}
	srep, err := Stream(ctx, env, config.Trigger{}, nil)
	if err != nil || srep.SilverRows != 5 {
		t.Fatalf("stream after init: %+v %v", srep, err)
	}
	return env
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// TestInitFileLake: init on a local lake that does not exist yet.
func TestInitFileLake(t *testing.T) {
	checkInit(t, testPipeline(t, t.TempDir()+"/lake", ""), "")
}

// TestInitCreatesBucketOnMinIO: init creates a bucket that does not exist, on a real MinIO.
func TestInitCreatesBucketOnMinIO(t *testing.T) {
	s3cfg, ok := s3test.Config(t)
	if !ok {
		t.Skipf("no S3 test server: set %s (run `make test`, or `eval $(scripts/minio.sh start)`)", s3test.EndpointEnv)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	bucket := "medallion-init-" + hex.EncodeToString(rnd[:])
	cfg := testPipeline(t, "s3://"+bucket+"/lake", fmt.Sprintf("s3: {endpoint: %s, path_style: true}\n", s3cfg.Endpoint))
	cfg.S3.Credentials = config.Credentials{AccessKeyID: s3cfg.AccessKeyID, SecretAccessKey: s3cfg.SecretAccessKey}
	env := checkInit(t, cfg, "created")
	t.Cleanup(func() {
		ctx := context.Background()
		for info, err := range env.Lake.List(ctx, "", objstore.ListOptions{}) {
			if err != nil {
				break
			}
			_ = env.Lake.Delete(ctx, info.Key)
		}
		if b, ok := env.Lake.(*s3.Bucket); ok {
			_, _ = b.Client().DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: &bucket})
		}
	})
}
