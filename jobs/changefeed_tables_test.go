package jobs

import (
	"context"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
)

// feedState is whether the table at path has delta.enableChangeDataFeed=true and a protocol
// that supports the changeDataFeed writer feature (read from the log, not from the config).
func feedState(t *testing.T, env Env, path string) (prop, feature bool) {
	t.Helper()
	snap, err := table.Open(objstore.WithPrefix(env.Lake, path), table.Options{}).Log().Snapshot(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return snap.Metadata().Configuration["delta.enableChangeDataFeed"] == "true", snap.Protocol().SupportsWriterFeature("changeDataFeed")
}

// TestTablesChangeDataFeed: tables.change_data_feed: true creates bronze, rejects and silver
// with the feed on, whether ingest and the stream create them or init does (and without it
// they have none); their appends read back through table.Changes as inserts only, and
// backfill-columns, the one rewrite of bronze and silver, keeps invariant C on both (each
// moved row an update pair) while the stream reading bronze skips it.
func TestTablesChangeDataFeed(t *testing.T) {
	ctx := context.Background()
	sources := []string{"bronze/events", "bronze/rejects", "silver/events"}
	withFeed := func(dir, schema string) Env {
		env, err := NewEnv(ctx, testutil.Pipeline(t, evolvingYAML(dir, schema)+"tables: {change_data_feed: true}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.Lake.Close() })
		return env
	}

	// Without the key: the stream's tables have no feed (gold has it by default).
	plain := openEvolving(t, t.TempDir(), testutil.EventsSchema)
	defer plain.Lake.Close()
	landLine(t, plain, "landing/events/a.json", `{"event_id":"p-1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}`)
	runIngestStream(t, plain)
	for _, p := range sources {
		if prop, _ := feedState(t, plain, p); prop {
			t.Fatalf("%s has the change data feed on without tables.change_data_feed", p)
		}
	}

	// init creates them with it.
	initEnv := withFeed(t.TempDir(), testutil.EventsSchema)
	if _, err := Init(ctx, initEnv); err != nil {
		t.Fatal(err)
	}
	for _, p := range sources {
		if prop, feature := feedState(t, initEnv, p); !prop || !feature {
			t.Errorf("init: %s: property %v, changeDataFeed writer feature %v; want both", p, prop, feature)
		}
	}

	// So do ingest and the stream, on a lake init never saw.
	dir := t.TempDir()
	env := withFeed(dir, testutil.EventsSchema)
	landLine(t, env, "landing/events/a.json", strings.Join([]string{
		`{"event_id":"e-1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z","country":"FR","x":1}`,
		`{"event_id":"e-2","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z","country":7}`,
		`{"event_id":"e-3","event_type":"b","amount":2,"event_time":"2024-05-01T12:01:00Z"}`,
		`not json`,
	}, "\n"))
	runIngestStream(t, env)
	landLine(t, env, "landing/events/b.json", `{"event_id":"e-4","event_type":"a","amount":1,"event_time":"2024-05-01T13:00:00Z","country":"IT"}`)
	runIngestStream(t, env)
	wantInserts := map[string]int{"bronze/events": 4, "bronze/rejects": 1, "silver/events": 4}
	for _, p := range sources {
		if prop, feature := feedState(t, env, p); !prop || !feature {
			t.Fatalf("ingest/stream: %s: property %v, changeDataFeed writer feature %v; want both", p, prop, feature)
		}
		vs, err := cdftest.CheckInvariantC(ctx, table.Open(objstore.WithPrefix(env.Lake, p), table.Options{}))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got := cdftest.Counts(vs); len(got) != 1 || got["insert"] != wantInserts[p] {
			t.Errorf("%s: change rows %v, want %d inserts only", p, got, wantInserts[p])
		}
	}

	// country is declared now: backfill-columns moves the rescued values into it in bronze
	// and silver, and their feeds still give the tables.
	env.Lake.Close()
	env = withFeed(dir, strings.TrimSuffix(testutil.EventsSchema, "\n")+"\n  - {name: country, type: string}\n")
	rep, err := BackfillColumns(ctx, env, "")
	if err != nil {
		t.Fatal(err)
	}
	moved := map[string]int64{}
	for _, s := range rep {
		for _, r := range s.Tables {
			moved[r.Table] = r.ValuesMoved
		}
	}
	if moved["bronze/events"] == 0 || moved["silver/events"] == 0 {
		t.Fatalf("backfill-columns moved nothing: %+v", rep)
	}
	if got := scanColumn(t, env, "silver/events", "event_id", "country"); got["e-1"] != "FR" {
		t.Fatalf("silver after backfill: e-1 has country %v, want FR", got["e-1"])
	}
	// The stream reading bronze skips the backfill's commit (dataChange=false, with change
	// files): the next row reaches silver once, and no row twice.
	landLine(t, env, "landing/events/c.json", `{"event_id":"e-5","event_type":"a","amount":1,"event_time":"2024-05-01T13:01:00Z","country":"DE"}`)
	runIngestStream(t, env)
	if got := scanColumn(t, env, "silver/events", "event_id", "country"); len(got) != 5 || got["e-5"] != "DE" {
		t.Fatalf("silver after backfill and one more row: %v, want e-1..e-5 with e-5 in DE", got)
	}
	st := table.Open(objstore.WithPrefix(env.Lake, "silver/events"), table.Options{})
	head, err := st.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	silverRows, err := cdftest.Scan(ctx, st, head.Version())
	if err != nil {
		t.Fatal(err)
	}
	if n := sumCounts(silverRows); n != 5 {
		t.Fatalf("silver holds %d rows after backfill and one more row, want 5", n)
	}
	for _, p := range []string{"bronze/events", "silver/events"} {
		vs, err := cdftest.CheckInvariantC(ctx, table.Open(objstore.WithPrefix(env.Lake, p), table.Options{}))
		if err != nil {
			t.Fatalf("%s after backfill-columns: %v", p, err)
		}
		if got := cdftest.Counts(vs); got["update_preimage"] != got["update_postimage"] || got["update_postimage"] == 0 {
			t.Errorf("%s after backfill-columns: change rows %v, want the moved rows as pre/post-image pairs", p, got)
		}
	}
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}
