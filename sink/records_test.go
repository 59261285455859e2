package sink

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// changeSet builds version 5's change rows of the gold schema from "w|type|count|change".
func changeSet(t *testing.T, rows ...string) table.ChangeSet {
	t.Helper()
	schema, err := txlog.ParseSchema(goldSchema)
	if err != nil {
		t.Fatal(err)
	}
	schema.Fields = append(schema.Fields,
		txlog.StructField{Name: table.ChangeTypeColumn, Type: txlog.PrimitiveType{Name: "string"}, Nullable: true},
		txlog.StructField{Name: table.CommitVersionColumn, Type: txlog.PrimitiveType{Name: "long"}, Nullable: true},
		txlog.StructField{Name: table.CommitTimestampColumn, Type: txlog.PrimitiveType{Name: "timestamp"}, Nullable: true})
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 5, 1, 2, 3, 0, time.UTC)
	g := &cdfGold{t: t}
	for _, r := range rows {
		var k gkey
		var count int64
		var change string
		f := strings.Split(r, "|")
		fmt.Sscan(f[0], &k.w)
		k.typ = f[1]
		fmt.Sscan(f[2], &count)
		change = f[3]
		g.appendRow(b, k, gval{count: count}, change)
		b.Columns[5].AppendInt64(5)
		b.Columns[6].AppendTime(at)
	}
	return table.ChangeSet{Version: 5, Timestamp: at, Rows: b}
}

// rendered is a record as "key => value [headers]" ("null" for a tombstone).
func rendered(e *encoder, cs table.ChangeSet) ([]string, Counts, error) {
	recs, n, err := e.records(cs)
	var out []string
	for _, r := range recs {
		v := "null"
		if r.Value != nil {
			v = string(r.Value)
		}
		var hs []string
		for _, h := range r.Headers {
			hs = append(hs, h.Key+"="+string(h.Value))
		}
		if !r.Timestamp.Equal(cs.Timestamp) || r.Topic != "t" {
			return nil, n, fmt.Errorf("record %s: timestamp %s, topic %s", r.Key, r.Timestamp, r.Topic)
		}
		out = append(out, fmt.Sprintf("%s => %s %v", r.Key, v, hs))
	}
	return out, n, err
}

// TestRecordsGolden fixes the record format (the topic's contract): key, value, headers.
func TestRecordsGolden(t *testing.T) {
	e := &encoder{topic: "t", table: "gold/events_5m", keyCols: goldKey}
	got, n, err := rendered(e, changeSet(t, "1|click|7|insert", "2||3|delete"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"window":{"start":"2026-12-01T00:10:00Z","end":"2026-12-01T00:15:00Z"},"event_type":null} => null [medallion.table=gold/events_5m medallion.commit_version=5 medallion.change_type=delete]`,
		`{"window":{"start":"2026-12-01T00:05:00Z","end":"2026-12-01T00:10:00Z"},"event_type":"click"} => {"change_type":"insert","commit_version":5,"commit_timestamp":"2026-12-05T01:02:03Z","row":{"window":{"start":"2026-12-01T00:05:00Z","end":"2026-12-01T00:10:00Z"},"event_type":"click","count":7,"late_rows":0}} [medallion.table=gold/events_5m medallion.commit_version=5 medallion.change_type=insert]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n != (Counts{Upserts: 1, Tombstones: 1}) {
		t.Errorf("counts %+v", n)
	}
}

// TestRecordsRules: which change rows of a version become which records (package doc).
func TestRecordsRules(t *testing.T) {
	gold := &encoder{topic: "t", table: "g", keyCols: goldKey}
	keyless := &encoder{topic: "t", table: "g"}
	cases := []struct {
		name string
		e    *encoder
		rows []string
		want []string // "key-summary value-summary" per record: w/type => count or null
		n    Counts
	}{
		{"update keeps the post-image only", gold, []string{"1|a|1|update_preimage", "1|a|2|update_postimage"}, []string{"1|a=2"}, Counts{Upserts: 1, Preimages: 1}},
		{"delete then insert of a key (a rewritten file)", gold, []string{"1|a|1|delete", "2|a|5|delete", "1|a|3|insert"}, []string{"2|a=null", "1|a=3"}, Counts{Upserts: 1, Tombstones: 1}},
		{"a key once per version", gold, []string{"1|a|1|delete", "1|a|1|delete", "3|b|1|insert", "3|b|4|insert"}, []string{"1|a=null", "3|b=4"}, Counts{Upserts: 1, Tombstones: 1}},
		{"tombstones before rows", gold, []string{"4|a|1|insert", "1|b|1|delete"}, []string{"1|b=null", "4|a=1"}, Counts{Upserts: 1, Tombstones: 1}},
		{"keyless: an update is a new key", keyless, []string{"1|a|1|update_preimage", "1|a|2|update_postimage"}, []string{"1|a=null", "1|a=2"}, Counts{Upserts: 1, Tombstones: 1}},
		{"keyless: same row removed and added", keyless, []string{"1|a|1|delete", "1|a|1|insert"}, []string{"1|a=1"}, Counts{Upserts: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, n, err := tc.e.records(changeSet(t, tc.rows...))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				var w int
				var typ string
				ks := string(r.Key)
				for i := range 20 {
					if strings.Contains(ks, base.Add(time.Duration(i)*5*time.Minute).Format("\"2006-01-02T15:04:05Z\"")) {
						w = i
						break
					}
				}
				if i := strings.Index(ks, `"event_type":"`); i >= 0 {
					typ = ks[i+len(`"event_type":"`):][:1]
				}
				v := "null"
				if r.Value != nil {
					_, after, _ := strings.Cut(string(r.Value), `"count":`)
					v, _, _ = strings.Cut(after, ",")
				}
				got = append(got, fmt.Sprintf("%d|%s=%s", w, typ, v))
			}
			if !slices.Equal(got, tc.want) || n != tc.n {
				t.Errorf("records %v %+v, want %v %+v", got, n, tc.want, tc.n)
			}
		})
	}
}

// TestRecordsKeylessLeavesNullsOut: a keyless table's key is its non-null columns, so a column
// added later (null in old rows) leaves the old rows' keys alone.
func TestRecordsKeylessLeavesNullsOut(t *testing.T) {
	e := &encoder{topic: "t", table: "silver/x"}
	recs, _, err := e.records(changeSet(t, "1||7|insert"))
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	want := `{"window":{"start":"2026-12-01T00:05:00Z","end":"2026-12-01T00:10:00Z"},"count":7,"late_rows":0}`
	if string(recs[0].Key) != want {
		t.Errorf("key %s, want %s", recs[0].Key, want)
	}
}

// TestRecordsErrors: change rows a sink cannot publish are errors naming the row or column.
func TestRecordsErrors(t *testing.T) {
	cs := changeSet(t, "1|a|1|upsert")
	if _, _, err := (&encoder{topic: "t", table: "g", keyCols: goldKey}).records(cs); err == nil || !strings.Contains(err.Error(), `_change_type "upsert"`) {
		t.Errorf("unknown change type: %v", err)
	}
	cs = changeSet(t, "1|a|1|insert")
	if _, _, err := (&encoder{topic: "t", table: "g", keyCols: []string{"window", "region"}}).records(cs); err == nil || !strings.Contains(err.Error(), `key column "region" is not a column of table g`) {
		t.Errorf("missing key column: %v", err)
	}
	cs.Version = 6
	if _, _, err := (&encoder{topic: "t", table: "g", keyCols: goldKey}).records(cs); err == nil || !strings.Contains(err.Error(), "says _commit_version 5") {
		t.Errorf("row of another version: %v", err)
	}
}
