package txlog

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestCreateCommitGolden pins the exact bytes of a version-0 commit against a hand-written
// file in Spark's shape (delta-protocol.md §3, §10): commitInfo first, operationParameters in
// Spark's encoding, metrics as strings, protocol (1,2), a URI-encoded add path.
func TestCreateCommitGolden(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := New(b, Options{Clock: func() time.Time { return time.UnixMilli(1718000000000) }, EngineInfo: "test-engine"})
	tx := l.Begin(nil)
	created := int64(1700000000000)
	tx.SetMetadata(Metadata{ID: "t-1", SchemaString: `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`,
		Configuration: map[string]string{"delta.appendOnly": "false"}, CreatedTime: &created})
	tx.Add(&Add{Path: "x=A%2FA/a b.parquet", Size: 3, ModificationTime: 5, DataChange: true, Stats: `{"numRecords":1}`})
	if _, err := tx.Commit(ctx, Operation{Name: "CREATE TABLE AS SELECT",
		Parameters: map[string]any{"isManaged": false, "partitionBy": []string{}, "properties": map[string]string{"delta.appendOnly": "false"}},
		Metrics:    map[string]int64{"numFiles": 1, "numOutputRows": 1}}); err != nil {
		t.Fatal(err)
	}
	got, err := objstore.ReadAll(ctx, b, CommitKey(0))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/create_commit.golden")
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.ReplaceAll(string(got), tx.TxnID(), "<txnId>"); g != string(want) {
		t.Errorf("commit file:\n%s\nwant:\n%s", g, want)
	}
}
