package stream

import (
	"context"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestCreateMissingRefusesRenamedColumn: Spark put silver under column mapping and renamed
// amount to amt. The stream took amount for a new column: it refused with "add it with Spark
// (ALTER TABLE ... ADD COLUMN)", and once that was done it went on, and replay rebuilt gold
// from silver rows whose amount was NULL, without an error. Now it names the rename and the
// way back, before and after such an add.
func TestCreateMissingRefusesRenamedColumn(t *testing.T) {
	ctx := context.Background()
	mapped := `{"type":"struct","fields":[
{"name":"event_id","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"event_id"}},
{"name":"amt","type":"double","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"amount"}}%s]}`
	input := pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"event_id","type":"string","nullable":true,"metadata":{}},{"name":"amount","type":"double","nullable":true,"metadata":{}}]}`)
	for _, c := range []struct{ extra, want string }{
		{"", "RENAME COLUMN amt TO amount"},
		{`,{"name":"amount","type":"double","nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-x"}}`, "DROP COLUMN amount"},
	} {
		tbl := table.Open(mem.New(), table.Options{})
		schema := pqtest.MustSchema(t, strings.ReplaceAll(mapped, "%s", c.extra))
		if _, err := tbl.Create(ctx, schema, nil, map[string]string{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "3"}); err != nil {
			t.Fatal(err)
		}
		err := createMissing(ctx, []outTable{{t: tbl, schema: input, path: "silver/events", evolve: true, name: "silver", kind: txlog.WriteAppend}})
		if err == nil || !strings.Contains(err.Error(), "renamed") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("extra %q: createMissing = %v, want the rename named and %q", c.extra, err, c.want)
		}
	}
}
