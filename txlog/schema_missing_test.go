package txlog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestMetadataWithoutSchemaString: a metaData action without a schema string is a corrupt log
// whose message says the schema is missing, whichever way the key is missing.
func TestMetadataWithoutSchemaString(t *testing.T) {
	ctx := context.Background()
	for name, field := range map[string]string{
		"absent": ``,
		"null":   `"schemaString":null,`,
		"empty":  `"schemaString":"",`,
		"blank":  `"schemaString":"  ",`,
	} {
		t.Run(name, func(t *testing.T) {
			b := mem.New()
			commit := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"t-1","format":{"provider":"parquet","options":{}},` + field + `"partitionColumns":[],"configuration":{}}}
`
			if err := objstore.PutBytes(ctx, b, "_delta_log/00000000000000000000.json", []byte(commit)); err != nil {
				t.Fatal(err)
			}
			snap, err := New(b, Options{}).Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = snap.Schema()
			if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "no schemaString") ||
				!strings.Contains(err.Error(), `"t-1"`) || !strings.Contains(err.Error(), "version 0") {
				t.Fatalf("schema: %v", err)
			}
		})
	}
}
