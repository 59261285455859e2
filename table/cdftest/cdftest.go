// Package cdftest checks a table's change data feed independently of the code that writes or
// reads it (test oracle), and checks the product's reader (table.Changes) against it: it reads the log's JSON commits itself, decodes each version's
// change data files (or, for a version without any, its dataChange adds and removes as inserts
// and deletes, as the protocol says readers must) with the plain Parquet reader, applies the
// change rows in version order to a multiset (inserts and post-images added, deletes and
// pre-images removed) and compares it with a scan of the table at each version: invariant C.
// It owns nothing of the product; tests only. Partition columns must be strings.
package cdftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// Row is one change row: its type, the version that wrote it and its values by column name.
type Row struct {
	Type    string
	Version int64
	Values  map[string]any
}

// Key is a canonical form of a row's values: columns by name, nulls left out, so a row
// written before a nullable column was added equals the same row read with it as null.
func Key(values map[string]any) string {
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(values)) {
		v := values[k]
		if v == nil {
			continue
		}
		fmt.Fprintf(&sb, "%s=%T:%v\x1f", k, v, v)
	}
	return sb.String()
}

// Version is what one commit says about the feed.
type Version struct {
	Version int64
	// CDC: the version has change data files (Rows come from them); otherwise Rows come from
	// its dataChange adds and removes.
	CDC bool
	// ChangeFiles are the cdc actions' paths; DataChange whether any add or remove has
	// dataChange=true.
	ChangeFiles []string
	DataChange  bool
	Rows        []Row
}

// Read reads versions [from, to] of the table in b.
func Read(ctx context.Context, b objstore.Bucket, from, to int64) ([]Version, error) {
	var schema *txlog.StructType
	var parts []string
	var out []Version
	for v := int64(0); v <= to; v++ {
		actions, err := txlog.ReadActions(ctx, b, v)
		if err != nil {
			return nil, fmt.Errorf("cdftest: version %d: %w", v, err)
		}
		ver := Version{Version: v}
		for _, a := range actions {
			switch {
			case a.MetaData != nil:
				if schema, err = a.MetaData.Schema(); err != nil {
					return nil, err
				}
				parts = a.MetaData.PartitionColumns
			case a.CDC != nil:
				ver.CDC = true
				ver.ChangeFiles = append(ver.ChangeFiles, a.CDC.Path)
			case a.Add != nil && a.Add.DataChange, a.Remove != nil && a.Remove.DataChange:
				ver.DataChange = true
			}
		}
		if v < from {
			continue
		}
		for _, a := range actions {
			var rows []map[string]any
			typ := ""
			switch {
			case a.CDC != nil:
				rows, err = readFile(ctx, b, schema, parts, a.CDC.Path, a.CDC.PartitionValues, true)
			case ver.CDC:
				continue
			case a.Add != nil && a.Add.DataChange:
				typ = string(table.ChangeInsert)
				rows, err = readFile(ctx, b, schema, parts, a.Add.Path, a.Add.PartitionValues, false)
			case a.Remove != nil && a.Remove.DataChange:
				typ = string(table.ChangeDelete)
				rows, err = readFile(ctx, b, schema, parts, a.Remove.Path, a.Remove.PartitionValues, false)
			}
			if err != nil {
				return nil, fmt.Errorf("cdftest: version %d: %w", v, err)
			}
			for _, r := range rows {
				t := typ
				if t == "" {
					t, _ = r[table.ChangeTypeColumn].(string)
					delete(r, table.ChangeTypeColumn)
				}
				ver.Rows = append(ver.Rows, Row{Type: t, Version: v, Values: r})
			}
		}
		out = append(out, ver)
	}
	return out, nil
}

func readFile(ctx context.Context, b objstore.Bucket, schema *txlog.StructType, parts []string, path string, pv map[string]*string, cdc bool) ([]map[string]any, error) {
	if schema == nil {
		return nil, errors.New("no metadata before the first file")
	}
	fs := &txlog.StructType{}
	for _, f := range schema.Fields {
		if !slices.Contains(parts, f.Name) {
			fs.Fields = append(fs.Fields, f)
		}
	}
	if cdc {
		fs.Fields = append(fs.Fields, txlog.StructField{Name: table.ChangeTypeColumn, Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true})
	}
	data, err := objstore.ReadAll(ctx, b, path)
	if err != nil {
		return nil, err
	}
	batches, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), fs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []map[string]any
	for _, bt := range batches {
		for i := range bt.Len() {
			r := map[string]any{}
			for k, f := range fs.Fields {
				r[f.Name] = bt.Columns[k].Value(i)
			}
			for _, p := range parts {
				if s := pv[p]; s != nil {
					r[p] = *s
				} else {
					r[p] = nil
				}
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// Apply applies the change rows of vs in order to state (canonical row -> copies), failing
// on a delete or pre-image of a row state does not hold.
func Apply(state map[string]int, vs []Version) error {
	for _, v := range vs {
		for _, r := range v.Rows {
			k := Key(r.Values)
			switch r.Type {
			case string(table.ChangeInsert), string(table.ChangePostimage):
				state[k]++
			case string(table.ChangeDelete), string(table.ChangePreimage):
				if state[k] == 0 {
					return fmt.Errorf("version %d: %s of a row the feed does not hold: %s", v.Version, r.Type, k)
				}
				state[k]--
				if state[k] == 0 {
					delete(state, k)
				}
			default:
				return fmt.Errorf("version %d: change type %q", v.Version, r.Type)
			}
		}
	}
	return nil
}

// Scan is the multiset of the table's rows at version v, by a plain scan.
func Scan(ctx context.Context, t *table.Table, v int64) (map[string]int, error) {
	out := map[string]int{}
	for b, err := range t.Scan(ctx, table.ScanOptions{Version: &v}) {
		if err != nil {
			return nil, err
		}
		for i := range b.Len() {
			r := map[string]any{}
			for k, f := range b.Schema.Fields {
				r[f.Name] = b.Columns[k].Value(i)
			}
			out[Key(r)]++
		}
	}
	return out, nil
}

// CheckInvariantC applies the table's feed from version 0 and compares, at every version,
// with a scan of the table at that version. It returns the versions read.
func CheckInvariantC(ctx context.Context, t *table.Table) ([]Version, error) {
	snap, err := t.Log().Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	vs, err := Read(ctx, t.Bucket(), 0, snap.Version())
	if err != nil {
		return nil, err
	}
	state := map[string]int{}
	for _, v := range vs {
		if err := Apply(state, []Version{v}); err != nil {
			return vs, err
		}
		want, err := Scan(ctx, t, v.Version)
		if err != nil {
			return vs, err
		}
		if !maps.Equal(state, want) {
			return vs, fmt.Errorf("invariant C broken at version %d:\n%s", v.Version, diff(state, want))
		}
	}
	// A table with the feed on from its creation is read by the product's reader too, which
	// must agree with this one.
	first, err := t.Log().SnapshotAt(ctx, 0)
	if err != nil {
		return vs, err
	}
	if table.ChangeFeedOn(first) {
		return vs, AgreeWithReader(ctx, t, vs)
	}
	return vs, nil
}

func diff(got, want map[string]int) string {
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if got[k] != want[k] {
			fmt.Fprintf(&sb, "  feed %d, table %d: %s\n", got[k], want[k], k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[k]; !ok {
			fmt.Fprintf(&sb, "  feed 0, table %d: %s\n", want[k], k)
		}
	}
	return sb.String()
}

// AgreeWithReader checks that table.Changes, the product's reader, yields for every version
// of vs the change rows Read found (as multisets; versions with none yield nothing).
func AgreeWithReader(ctx context.Context, t *table.Table, vs []Version) error {
	if len(vs) == 0 {
		return nil
	}
	want := map[int64]map[string]int{}
	for _, v := range vs {
		for _, r := range v.Rows {
			if want[v.Version] == nil {
				want[v.Version] = map[string]int{}
			}
			want[v.Version][r.Type+" "+Key(r.Values)]++
		}
	}
	got := map[int64]map[string]int{}
	for cs, err := range t.Changes(ctx, vs[0].Version, vs[len(vs)-1].Version) {
		if err != nil {
			return fmt.Errorf("table.Changes: %w", err)
		}
		b := cs.Rows
		for i := range b.Len() {
			r := map[string]any{}
			typ := ""
			for k, f := range b.Schema.Fields {
				switch f.Name {
				case table.ChangeTypeColumn:
					typ, _ = b.Columns[k].Value(i).(string)
				case table.CommitVersionColumn, table.CommitTimestampColumn:
				default:
					r[f.Name] = b.Columns[k].Value(i)
				}
			}
			if got[cs.Version] == nil {
				got[cs.Version] = map[string]int{}
			}
			got[cs.Version][typ+" "+Key(r)]++
		}
	}
	for _, v := range vs {
		if !maps.Equal(got[v.Version], want[v.Version]) {
			return fmt.Errorf("version %d: table.Changes and the log's change files differ:\n%s", v.Version, diff(got[v.Version], want[v.Version]))
		}
	}
	return nil
}

// Counts sums the change rows of vs by type.
func Counts(vs []Version) map[string]int {
	out := map[string]int{}
	for _, v := range vs {
		for _, r := range v.Rows {
			out[r.Type]++
		}
	}
	return out
}
