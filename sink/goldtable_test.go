package sink

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// goldSchema is a gold table's shape: window, one group-by column, two aggregates.
const goldSchema = `{"type":"struct","fields":[
 {"name":"window","type":{"type":"struct","fields":[{"name":"start","type":"timestamp","nullable":true,"metadata":{}},{"name":"end","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":false,"metadata":{}},
 {"name":"event_type","type":"string","nullable":true,"metadata":{}},
 {"name":"count","type":"long","nullable":false,"metadata":{}},
 {"name":"late_rows","type":"long","nullable":false,"metadata":{}}]}`

var goldKey = []string{"window", "event_type"}

// gkey is a gold row's key in the test's model: the window's index and the group.
type gkey struct {
	w   int
	typ string
}

var base = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func (k gkey) start() time.Time { return base.Add(time.Duration(k.w) * 5 * time.Minute) }

// gval is a gold row's aggregates in the model.
type gval struct{ count, late int64 }

// cdfGold is a gold-shaped table with the change data feed on whose versions the test writes
// by hand, as a writer of change data files would: each version rewrites the table into one
// data file and records its changes (insert, pre/post images, delete) in a change data file.
// state is the model: what the table holds, kept by the test and never read back from it.
type cdfGold struct {
	t       *testing.T
	b       objstore.Bucket
	tbl     *table.Table
	schema  *txlog.StructType
	state   map[gkey]gval
	files   []*txlog.Add
	version int64
	// changed are the keys each version changed: the records a sink must publish for it.
	changed map[int64]map[gkey]bool
	// cdcPaths are each version's change data file, under the table.
	cdcPaths map[int64]string
}

func newCDFGold(t *testing.T, b objstore.Bucket) *cdfGold {
	t.Helper()
	schema, err := txlog.ParseSchema(goldSchema)
	if err != nil {
		t.Fatal(err)
	}
	tbl := table.Open(b, table.Options{})
	if _, err := tbl.Create(context.Background(), schema, nil, map[string]string{table.ChangeFeedProperty: "true"}); err != nil {
		t.Fatal(err)
	}
	return &cdfGold{t: t, b: b, tbl: tbl, schema: schema, state: map[gkey]gval{}, changed: map[int64]map[gkey]bool{}, cdcPaths: map[int64]string{}}
}

func (g *cdfGold) appendRow(b *pq.Batch, k gkey, v gval, change string) {
	w := b.Columns[0]
	w.Children[0].AppendTime(k.start())
	w.Children[1].AppendTime(k.start().Add(5 * time.Minute))
	w.AppendStruct()
	if k.typ == "" {
		b.Columns[1].AppendNull()
	} else {
		b.Columns[1].AppendString(k.typ)
	}
	b.Columns[2].AppendInt64(v.count)
	b.Columns[3].AppendInt64(v.late)
	if change != "" {
		b.Columns[4].AppendString(change)
	}
}

func (g *cdfGold) write(dir objstore.Bucket, b *pq.Batch) *txlog.Add {
	g.t.Helper()
	w, err := table.NewDataWriter(dir, b.Schema, nil, pq.WriteOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	if err := w.Write(context.Background(), b); err != nil {
		g.t.Fatal(err)
	}
	adds, err := w.Close(context.Background())
	if err != nil || len(adds) != 1 {
		g.t.Fatalf("write: %v (%d files)", err, len(adds))
	}
	return adds[0]
}

// apply commits one version: upserts set rows (a new key is an insert, an existing one a
// pre/post-image pair), deletes remove existing keys.
func (g *cdfGold) apply(upserts map[gkey]gval, deletes []gkey) {
	g.t.Helper()
	cdcSchema := &txlog.StructType{Fields: append(slices.Clone(g.schema.Fields),
		txlog.StructField{Name: table.ChangeTypeColumn, Type: txlog.PrimitiveType{Name: "string"}, Nullable: true})}
	changes, err := pq.NewBatch(cdcSchema)
	if err != nil {
		g.t.Fatal(err)
	}
	changed := map[gkey]bool{}
	for _, k := range sortedKeys(upserts) {
		v := upserts[k]
		changed[k] = true
		if old, ok := g.state[k]; ok {
			g.appendRow(changes, k, old, string(table.ChangePreimage))
			g.appendRow(changes, k, v, string(table.ChangePostimage))
		} else {
			g.appendRow(changes, k, v, string(table.ChangeInsert))
		}
		g.state[k] = v
	}
	for _, k := range deletes {
		if old, ok := g.state[k]; ok {
			g.appendRow(changes, k, old, string(table.ChangeDelete))
			delete(g.state, k)
			changed[k] = true
		}
	}
	if changes.Len() == 0 {
		return
	}

	data, err := pq.NewBatch(g.schema)
	if err != nil {
		g.t.Fatal(err)
	}
	for _, k := range sortedKeys(g.state) {
		g.appendRow(data, k, g.state[k], "")
	}
	now := time.Now().UnixMilli()
	actions := []txlog.Action{{CommitInfo: &txlog.CommitInfo{Timestamp: now, Operation: "MERGE"}}}
	for _, f := range g.files {
		actions = append(actions, txlog.Action{Remove: &txlog.Remove{Path: f.Path, DeletionTimestamp: &now, DataChange: true}})
	}
	g.files = nil
	if data.Len() > 0 {
		add := g.write(g.b, data)
		add.DataChange = true
		g.files = append(g.files, add)
		actions = append(actions, txlog.Action{Add: add})
	}
	cdc := g.write(objstore.WithPrefix(g.b, table.ChangeDataDir), changes)
	actions = append(actions, txlog.Action{CDC: &txlog.CDC{Path: table.ChangeDataDir + cdc.Path, PartitionValues: cdc.PartitionValues, Size: cdc.Size}})
	raw, err := txlog.MarshalActions(actions)
	if err != nil {
		g.t.Fatal(err)
	}
	g.version++
	g.changed[g.version] = changed
	g.cdcPaths[g.version] = table.ChangeDataDir + cdc.Path
	if err := objstore.PutBytesIfAbsent(context.Background(), g.b, txlog.CommitKey(g.version), raw); err != nil {
		g.t.Fatal(err)
	}
}

// randomVersions applies n versions of random upserts and deletes over windows × groups.
func (g *cdfGold) randomVersions(rng *rand.Rand, n, windows int) {
	groups := []string{"click", "view", "buy", ""}
	for range n {
		ups := map[gkey]gval{}
		var dels []gkey
		for range 1 + rng.IntN(8) {
			k := gkey{rng.IntN(windows), groups[rng.IntN(len(groups))]}
			if rng.IntN(6) == 0 {
				dels = append(dels, k)
				continue
			}
			ups[k] = gval{count: int64(1 + rng.IntN(1000)), late: int64(rng.IntN(3))}
		}
		for k := range ups {
			dels = slices.DeleteFunc(dels, func(d gkey) bool { return d == k })
		}
		g.apply(ups, dels)
	}
}

func sortedKeys[V any](m map[gkey]V) []gkey {
	return slices.SortedFunc(maps.Keys(m), func(a, b gkey) int {
		if a.w != b.w {
			return a.w - b.w
		}
		if a.typ < b.typ {
			return -1
		}
		if a.typ > b.typ {
			return 1
		}
		return 0
	})
}

// scanned is the table as a scan reads it, independently of the change feed and the sink:
// each row decoded from pq's JSON rendering, keyed by "<window start>|<event_type>".
func scanned(t *testing.T, tbl *table.Table) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for b, err := range tbl.Scan(context.Background(), table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for r := range b.Len() {
			var row map[string]any
			if err := json.Unmarshal(pq.AppendJSONRow(nil, b, r), &row); err != nil {
				t.Fatal(err)
			}
			k := rowKey(row)
			if _, dup := out[k]; dup {
				t.Fatalf("the table holds key %s twice", k)
			}
			out[k] = row
		}
	}
	return out
}

// rowKey is a decoded gold row's window start and group.
func rowKey(row map[string]any) string {
	w, _ := row["window"].(map[string]any)
	return fmt.Sprintf("%v|%v", w["start"], row["event_type"])
}

// modelRows is the test's model of the table, rendered as scanned renders rows.
func (g *cdfGold) modelRows() map[string]map[string]any {
	out := map[string]map[string]any{}
	for k, v := range g.state {
		var typ any
		if k.typ != "" {
			typ = k.typ
		}
		row := map[string]any{
			"window":     map[string]any{"start": k.start().Format(time.RFC3339), "end": k.start().Add(5 * time.Minute).Format(time.RFC3339)},
			"event_type": typ, "count": float64(v.count), "late_rows": float64(v.late),
		}
		out[rowKey(row)] = row
	}
	return out
}
