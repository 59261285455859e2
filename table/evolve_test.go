package table

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

func evolveSchema(cols ...string) *txlog.StructType {
	st := &txlog.StructType{}
	for _, c := range cols {
		name, typ, _ := strings.Cut(c, " ")
		nullable := !strings.HasSuffix(typ, "!")
		st.Fields = append(st.Fields, txlog.StructField{Name: name, Type: txlog.PrimitiveType{Name: strings.TrimSuffix(typ, "!")}, Nullable: nullable})
	}
	return st
}

// TestEvolve: added columns land after their predecessor in the wanted schema, nullable, in
// one metaData commit; old rows read null; a second call commits nothing; other changes are
// refused with the column named and nothing committed.
func TestEvolve(t *testing.T) {
	ctx := context.Background()
	tbl := Open(mem.New(), Options{})
	if _, err := tbl.Create(ctx, evolveSchema("id string!", "n long", "_meta long!"), nil, nil); err != nil {
		t.Fatal(err)
	}
	old, _ := pq.NewBatch(evolveSchema("id string!", "n long", "_meta long!"))
	old.Columns[0].AppendString("a")
	old.Columns[1].AppendInt64(1)
	old.Columns[2].AppendInt64(0)
	if _, err := tbl.Append(ctx, []*pq.Batch{old}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	want := evolveSchema("id string!", "n long", "country string", "_meta long!", "ts timestamp_ntz")
	ev, err := tbl.Evolve(ctx, want, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if !ev.Changed || !slices.Equal(ev.Added, []string{"country", "ts"}) {
		t.Fatalf("evolution %+v", ev)
	}
	snap, _ := tbl.Latest(ctx)
	schema, _ := snap.Schema()
	var names []string
	for _, f := range schema.Fields {
		names = append(names, f.Name)
		if (f.Name == "country" || f.Name == "ts") && !f.Nullable {
			t.Errorf("added column %s is NOT NULL", f.Name)
		}
	}
	if got := strings.Join(names, " "); got != "id n country _meta ts" {
		t.Errorf("columns %s, want id n country _meta ts", got)
	}
	if snap.Metadata().Configuration["k"] != "v" {
		t.Errorf("configuration %v", snap.Metadata().Configuration)
	}
	if p := snap.Protocol(); !slices.Contains(p.ReaderFeatures, "timestampNtz") || !slices.Contains(p.WriterFeatures, "invariants") {
		t.Errorf("protocol %+v: a timestamp_ntz column needs timestampNtz, and writer 7 the legacy features", p)
	}
	for b, err := range tbl.Scan(ctx, ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if r := b.Row(0); r[0] != "a" || r[2] != nil || r[4] != nil {
			t.Errorf("old row reads %v, want the new columns null", r)
		}
	}
	again, err := tbl.Evolve(ctx, want, map[string]string{"k": "v"})
	if err != nil || again.Changed || again.Version != ev.Version {
		t.Fatalf("second Evolve: %+v, %v; want nothing committed at version %d", again, err, ev.Version)
	}

	for _, tc := range []struct {
		name string
		want *txlog.StructType
		says string
	}{
		{"retyped", evolveSchema("id string!", "n integer", "country string", "_meta long!", "ts timestamp_ntz"), "column n changed from long to integer"},
		{"removed", evolveSchema("id string!", "country string", "_meta long!", "ts timestamp_ntz"), "column n (long) is gone"},
		{"made NOT NULL", evolveSchema("id string!", "n long!", "country string", "_meta long!", "ts timestamp_ntz"), "column n changed from long to long NOT NULL"},
		{"new NOT NULL", evolveSchema("id string!", "n long", "country string", "_meta long!", "ts timestamp_ntz", "x long!"), "new column x is NOT NULL"},
		{"case", evolveSchema("id string!", "n long", "country string", "_meta long!", "ts timestamp_ntz", "N long"), "differs from column n only in case"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tbl.Evolve(ctx, tc.want, nil)
			if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v, want ErrIncompatibleSchema saying %q", err, tc.says)
			}
			if s, _ := tbl.Latest(ctx); s.Version() != ev.Version {
				t.Errorf("a refused evolution committed version %d", s.Version())
			}
		})
	}
}
