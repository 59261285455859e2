package jobs

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// evolvingPipeline is a one-source pipeline whose schema block is schema.
func evolvingPipeline(t *testing.T, lake, schema string) *config.Pipeline {
	t.Helper()
	return testutil.Pipeline(t, evolvingYAML(lake, schema))
}

func evolvingYAML(lake, schema string) string {
	return "lake: " + lake + `
landing: {path: landing/events/}
` + schema + `stream: {watermark: 10m, dedup: [event_id]}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
`
}

// scanColumn returns, per value of keyCol, the value of col in the table at path (the string

// openEvolving opens the evolving pipeline over the lake dir with the given schema.
func openEvolving(t *testing.T, dir, schema string) Env {
	t.Helper()
	env, err := NewEnv(context.Background(), evolvingPipeline(t, dir, schema), nil)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// landLine puts one NDJSON line as the landing object key.
func landLine(t *testing.T, env Env, key, line string) {
	t.Helper()
	if err := objstore.PutBytes(context.Background(), env.Lake, key, []byte(line+"\n")); err != nil {
		t.Fatal(err)
	}
}

// form of pq.Batch.Row's cell; "<nil>" for null) and fails when the table lacks col.
func scanColumn(t *testing.T, env Env, path, keyCol, col string) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	for b, err := range table.Open(objstore.WithPrefix(env.Lake, path), table.Options{}).Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatalf("scan %s: %v", path, err)
		}
		ki, ci := b.Schema.FieldIndex(keyCol), b.Schema.FieldIndex(col)
		if ki < 0 || ci < 0 {
			t.Fatalf("table %s has no column %s (columns %v)", path, col, b.Schema.Fields)
		}
		for i := range b.Len() {
			row := b.Row(i)
			out[row[ki].(string)] = row[ci]
		}
	}
	return out
}

func runIngestStream(t *testing.T, env Env) {
	t.Helper()
	ctx := context.Background()
	if _, err := IngestSources(ctx, env, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := StreamSources(ctx, env, "", config.Trigger{Kind: config.TriggerAvailableNow}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestAddedColumnReachesBronzeAndSilver is reproduction 1 of issue 30: a column added to
// `schema:` after bronze and silver exist is added to both tables (nullable, old rows null)
// before the first row that carries it, and that row keeps its value in bronze and silver.
func TestAddedColumnReachesBronzeAndSilver(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env := openEvolving(t, dir, testutil.EventsSchema)
	put := func(key, body string) {
		t.Helper()
		if err := objstore.PutBytes(ctx, env.Lake, key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	put("landing/events/a.json", `{"event_id":"old-1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z","country":"FR"}`+"\n")
	runIngestStream(t, env)
	env.Lake.Close()

	grown := strings.TrimSuffix(testutil.EventsSchema, "\n") + "\n  - {name: country, type: string}\n"
	env = openEvolving(t, dir, grown)
	defer env.Lake.Close()
	put("landing/events/b.json", `{"event_id":"evo-1","event_type":"a","amount":2,"event_time":"2024-05-01T12:01:00Z","country":"DE"}`+"\n")
	runIngestStream(t, env)

	for _, path := range []string{"bronze/events", "silver/events"} {
		got := scanColumn(t, env, path, "event_id", "country")
		if got["evo-1"] != "DE" {
			t.Errorf("%s: country of evo-1 is %v, want DE", path, got["evo-1"])
		}
		if got["old-1"] != nil {
			t.Errorf("%s: country of old-1 (written before the column existed) is %v, want null", path, got["old-1"])
		}
		rescued := scanColumn(t, env, path, "event_id", "_rescued_data")
		if r, _ := rescued["old-1"].(string); !strings.Contains(r, `"FR"`) {
			t.Errorf("%s: old-1's rescued data %v lost the value it rescued", path, rescued["old-1"])
		}
		if rescued["evo-1"] != nil {
			t.Errorf("%s: evo-1's rescued data is %v, want null", path, rescued["evo-1"])
		}
	}
}

// schemaWith is testutil.EventsSchema with its column lines replaced as edit says (old line
// -> new line; an empty new line removes it) and extra lines added.
func schemaWith(t *testing.T, edit map[string]string, extra ...string) string {
	t.Helper()
	s := testutil.EventsSchema
	for old, repl := range edit {
		if !strings.Contains(s, old) {
			t.Fatalf("no %q in the schema", old)
		}
		if repl == "" {
			s = strings.Replace(s, "  "+old+"\n", "", 1)
		} else {
			s = strings.Replace(s, old, repl, 1)
		}
	}
	for _, e := range extra {
		s += e + "\n"
	}
	return s
}

// TestSchemaChangeRefused: a change of an existing column (another type, removed, renamed,
// made required) is refused by ingest and by the stream at start, naming the column, its old
// and new definitions and the ways out, and nothing is committed to bronze.
func TestSchemaChangeRefused(t *testing.T) {
	const (
		amount = "- {name: amount,     type: double}"
		evType = "- {name: event_type, type: string}"
	)
	for _, tc := range []struct {
		name   string
		schema func(t *testing.T) string
		want   []string
	}{
		{"retyped", func(t *testing.T) string {
			return schemaWith(t, map[string]string{amount: "- {name: amount, type: string}"})
		},
			[]string{"column amount changed from {type: double} to {type: string}"}},
		{"narrowed", func(t *testing.T) string {
			return schemaWith(t, map[string]string{amount: "- {name: amount, type: float}"})
		},
			[]string{"column amount changed from {type: double} to {type: float}"}},
		{"removed", func(t *testing.T) string { return schemaWith(t, map[string]string{amount: ""}) },
			[]string{"column amount ({type: double}) was removed"}},
		{"renamed", func(t *testing.T) string {
			return schemaWith(t, map[string]string{amount: "- {name: amount_eur, type: double}"})
		},
			[]string{"column amount ({type: double}) was removed (renamed to amount_eur?"}},
		{"required", func(t *testing.T) string {
			return schemaWith(t, map[string]string{evType: "- {name: event_type, type: string, required: true}"})
		}, []string{"column event_type changed from {type: string} to {type: string, required: true}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			env := openEvolving(t, dir, testutil.EventsSchema)
			landLine(t, env, "landing/events/a.json", `{"event_id":"e1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}`)
			runIngestStream(t, env)
			env.Lake.Close()

			env = openEvolving(t, dir, tc.schema(t))
			defer env.Lake.Close()
			before := testutil.TableVersion(t, env.Lake, "bronze/events")
			_, ingestErr := IngestSources(ctx, env, "", nil)
			_, streamErr := StreamSources(ctx, env, "", config.Trigger{Kind: config.TriggerAvailableNow}, nil)
			for job, err := range map[string]error{"ingest": ingestErr, "stream": streamErr} {
				if !errors.Is(err, bronze.ErrSchemaChange) {
					t.Fatalf("%s: error %v, want bronze.ErrSchemaChange", job, err)
				}
				for _, w := range append(tc.want, "bronze/events", "add a new column", "new tables.bronze") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q does not say %q", job, err, w)
					}
				}
			}
			if after := testutil.TableVersion(t, env.Lake, "bronze/events"); after != before {
				t.Errorf("bronze went from version %d to %d under a refused schema", before, after)
			}
		})
	}
}

// definitionPipeline: events with dedup and a 5-minute count by event_type, clicks joined
// to events, each part replaceable by a test.
func definitionPipeline(t *testing.T, lake string, edit map[string]string) *config.Pipeline {
	t.Helper()
	y := "lake: " + lake + `
landing: {path: landing/events/}
` + testutil.EventsSchema + `stream: {watermark: 10m, dedup: [event_id]}
sources:
  - name: clicks
    schema:
      - {name: click_id, type: string}
      - {name: event_id, type: string}
      - {name: click_time, type: timestamp}
    stream: {event_time: click_time, watermark: 1h}
joins:
  - {name: ec, left: events, right: clicks, type: left_outer, on: [{left: event_id, right: event_id}], time: {lower: 0s, upper: 1h}}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
    output_mode: append
`
	for old, repl := range edit {
		if !strings.Contains(y, old) {
			t.Fatalf("no %q in the pipeline", old)
		}
		y = strings.Replace(y, old, repl, 1)
	}
	return testutil.Pipeline(t, y)
}

// TestDefinitionChangeRefused: a changed gold window, grouping, aggregate or output mode, a
// changed dedup, a changed join, and a join whose source gained a column are refused at start
// with stream.ErrDefinitionChanged naming what changed and the ways out (run refresh for a
// gold, a full refresh of the query otherwise), never a state error;
// the definition put back runs again.
func TestDefinitionChangeRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit map[string]string
		want []string
	}{
		{"window", map[string]string{"size: 5m}": "size: 10m}"}, []string{"gold events_5m", `window was "tumbling size 5m0s", is now "tumbling size 10m0s"`, "run refresh --table events_5m"}},
		{"group_by", map[string]string{"group_by: [event_type]": "group_by: []"}, []string{"gold events_5m", `group_by was "event_type", is now ""`, "run refresh --table events_5m"}},
		{"aggregates", map[string]string{"{fn: count, as: count}": "{fn: count, as: n}"}, []string{`aggregates was "count(*) as count", is now "count(*) as n"`, "run refresh --table events_5m"}},
		{"output_mode", map[string]string{"output_mode: append": "output_mode: update"}, []string{`output_mode was "append", is now "update"`, "run refresh --table events_5m"}},
		{"dedup", map[string]string{"dedup: [event_id]": "dedup: [event_id, event_type]"}, []string{"silver/events", `dedup was "event_id", is now "event_id, event_type"`, "full refresh"}},
		{"join type", map[string]string{"type: left_outer": "type: inner"}, []string{"join ec", `type was "left_outer", is now "inner"`, "_checkpoints/ec", "full refresh"}},
		{"join bounds", map[string]string{"upper: 1h": "upper: 2h"}, []string{"join ec", "time was", "full refresh"}},
		{"source grew", map[string]string{"- {name: click_time, type: timestamp}": "- {name: click_time, type: timestamp}\n      - {name: device, type: string}"},
			[]string{"join ec", "device is new", "silver/late_ec", "full refresh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			env, err := NewEnv(ctx, definitionPipeline(t, dir, nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			for key, body := range map[string]string{
				"landing/events/a.json": `{"event_id":"e1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}` + "\n",
				"landing/clicks/a.json": `{"click_id":"c1","event_id":"e1","click_time":"2024-05-01T12:01:00Z"}` + "\n",
			} {
				if err := objstore.PutBytes(ctx, env.Lake, key, []byte(body)); err != nil {
					t.Fatal(err)
				}
			}
			runIngestStream(t, env)
			env.Lake.Close()

			env, err = NewEnv(ctx, definitionPipeline(t, dir, tc.edit), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Lake.Close()
			if _, err := IngestSources(ctx, env, "", nil); err != nil {
				t.Fatal(err)
			}
			_, err = StreamSources(ctx, env, "", config.Trigger{Kind: config.TriggerAvailableNow}, nil)
			if !errors.Is(err, stream.ErrDefinitionChanged) {
				t.Fatalf("stream: error %v, want stream.ErrDefinitionChanged", err)
			}
			// A gold's way out is run refresh (docs/derived-tables.md); the other parts' a
			// full refresh of the query.
			for _, w := range append(tc.want, "Ways out") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestDefinitionAdoptedByOldTables: a gold table created before definitions were recorded
// (no medallion.definition property) adopts the config's definition on the next run, and a
// change after that is refused.
func TestDefinitionAdoptedByOldTables(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env := openEvolving(t, dir, testutil.EventsSchema)
	defer env.Lake.Close()
	landLine(t, env, "landing/events/a.json", `{"event_id":"e1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}`)
	runIngestStream(t, env)
	// As a table written before the property existed: the same metadata without it.
	gt := table.Open(objstore.WithPrefix(env.Lake, "gold/events_5m"), table.Options{})
	snap, err := gt.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	meta := snap.Metadata()
	meta.Configuration = maps.Clone(meta.Configuration)
	delete(meta.Configuration, stream.PropDefinition)
	tx := gt.Log().Begin(snap)
	tx.SetMetadata(meta)
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "UNSET TBLPROPERTIES"}); err != nil {
		t.Fatal(err)
	}
	runIngestStream(t, env)
	snap, err = table.Open(objstore.WithPrefix(env.Lake, "gold/events_5m"), table.Options{}).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Metadata().Configuration[stream.PropDefinition]; !strings.Contains(got, "tumbling size 5m0s") {
		t.Fatalf("gold's definition after the run: %q, want the config's adopted", got)
	}
	env.Config = testutil.Pipeline(t, strings.Replace(evolvingYAML(dir, testutil.EventsSchema), "size: 5m", "size: 10m", 1))
	if _, err := StreamSources(ctx, env, "", config.Trigger{Kind: config.TriggerAvailableNow}, nil); !errors.Is(err, stream.ErrDefinitionChanged) {
		t.Fatalf("after adoption, a changed window: %v, want stream.ErrDefinitionChanged", err)
	}
}

// TestAddedColumnConvergesAfterCrash: a run under the grown schema that fails at its N-th
// commit to any Delta log (before or after the object is stored, so both sides of the
// metaData commit and of the data commits after it), rerun without faults, gives the tables
// of an uninterrupted run: the column added once, its values in bronze and silver.
func TestAddedColumnConvergesAfterCrash(t *testing.T) {
	ctx := context.Background()
	template := t.TempDir()
	env := openEvolving(t, template, testutil.EventsSchema)
	landLine(t, env, "landing/events/a.json", `{"event_id":"old-1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}`)
	runIngestStream(t, env)
	landLine(t, env, "landing/events/b.json", `{"event_id":"evo-1","event_type":"a","amount":2,"event_time":"2024-05-01T12:01:00Z","country":"DE"}`)
	env.Lake.Close()
	grown := strings.TrimSuffix(testutil.EventsSchema, "\n") + "\n  - {name: country, type: string}\n"

	for n := 1; ; n++ {
		fired := false
		for _, after := range []bool{false, true} {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
				t.Fatal(err)
			}
			env := openEvolving(t, dir, grown)
			clean := env.Lake
			faulty := objstore.WithFaults(clean, objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpPutIfAbsent, KeyPrefix: "", Nth: n, After: after}}})
			env.Lake = &logOnly{FaultBucket: faulty, clean: clean}
			_, ierr := IngestSources(ctx, env, "", nil)
			if ierr == nil {
				_, ierr = StreamSources(ctx, env, "", config.Trigger{Kind: config.TriggerAvailableNow}, nil)
			}
			fired = fired || faulty.Fired() > 0
			env.Lake = clean
			runIngestStream(t, env)
			for _, path := range []string{"bronze/events", "silver/events"} {
				got := scanColumn(t, env, path, "event_id", "country")
				if got["evo-1"] != "DE" || got["old-1"] != nil || len(got) != 2 {
					t.Fatalf("fault at commit %d (after=%v, run error %v): %s country %v, want old-1 null, evo-1 DE", n, after, ierr, path, got)
				}
				if adds := operationCommits(t, env, path, "ADD COLUMNS"); adds != 1 {
					t.Fatalf("fault at commit %d (after=%v): %s has %d ADD COLUMNS commits, want 1", n, after, path, adds)
				}
			}
			clean.Close()
		}
		if !fired {
			if n < 3 {
				t.Fatalf("only %d commits in the run: the loop tested nothing", n-1)
			}
			t.Logf("a fault at each of the %d log commits of the run converged", n-1)
			return
		}
	}
}

// logOnly injects its faults into puts of Delta log entries only; every other call goes to
// the clean bucket.
type logOnly struct {
	*objstore.FaultBucket
	clean objstore.Bucket
}

func (l *logOnly) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.Contains(key, "/_delta_log/") && strings.HasSuffix(key, ".json") {
		return l.FaultBucket.PutIfAbsent(ctx, key, r, size)
	}
	return l.clean.PutIfAbsent(ctx, key, r, size)
}

// TestBackfillColumns: after a column is added, backfill-columns moves the values that older
// rows kept in _rescued_data into it, in bronze, silver and the quarantine alike (so silver
// is what replaying the backfilled bronze would give); values that do not fit stay rescued;
// a rerun commits nothing; and the stream goes on after it without reading a row twice.
func TestBackfillColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env := openEvolving(t, dir, testutil.EventsSchema)
	put := func(env Env, key, body string) {
		t.Helper()
		if err := objstore.PutBytes(ctx, env.Lake, key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	put(env, "landing/events/a.json", strings.Join([]string{
		`{"event_id":"old-1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z","country":"FR","x":1}`,
		`{"event_id":"old-2","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z","country":7}`,
		`{"event_id":"old-3","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}`,
		`{"event_id":"old-4","event_type":"a","amount":1,"event_time":"2024-05-01T13:00:00Z","country":"IT"}`,
	}, "\n")+"\n")
	runIngestStream(t, env)
	// Late for the 5-minute windows once the 13:00 row moved the watermark: quarantined.
	put(env, "landing/events/b.json", `{"event_id":"late-1","event_type":"a","amount":1,"event_time":"2024-05-01T12:01:00Z","country":"ES","y":"k"}`+"\n")
	runIngestStream(t, env)
	env.Lake.Close()

	grown := strings.TrimSuffix(testutil.EventsSchema, "\n") + "\n  - {name: country, type: string}\n"
	env = openEvolving(t, dir, grown)
	defer env.Lake.Close()
	runIngestStream(t, env)
	put(env, "landing/events/c.json", `{"event_id":"new-1","event_type":"a","amount":1,"event_time":"2024-05-01T13:01:00Z","country":"DE"}`+"\n")

	rep, err := BackfillColumns(ctx, env, "")
	if err != nil {
		t.Fatal(err)
	}
	// The oracle, from the landing lines: country where it is a string, and the rest of
	// each line's undeclared keys still rescued.
	wantCountry := map[string]any{"old-1": "FR", "old-2": nil, "old-3": nil, "old-4": "IT", "late-1": "ES"}
	wantRescued := map[string]any{"old-1": `{"x":1}`, "old-2": `{"country":7}`, "old-3": nil, "old-4": nil, "late-1": `{"y":"k"}`}
	check := func(path string, ids ...string) {
		t.Helper()
		country := scanColumn(t, env, path, "event_id", "country")
		rescued := scanColumn(t, env, path, "event_id", "_rescued_data")
		for _, id := range ids {
			if country[id] != wantCountry[id] || rescued[id] != wantRescued[id] {
				t.Errorf("%s: %s has country %v, rescued %v; want %v, %v", path, id, country[id], rescued[id], wantCountry[id], wantRescued[id])
			}
		}
	}
	check("bronze/events", "old-1", "old-2", "old-3", "old-4", "late-1")
	check("silver/events", "old-1", "old-2", "old-3", "old-4", "late-1")
	check("silver/late_events_5m", "late-1")
	moved := map[string]int64{}
	for _, s := range rep {
		for _, r := range s.Tables {
			moved[r.Table] = r.ValuesMoved
		}
	}
	if moved["bronze/events"] != 3 || moved["silver/events"] != 3 || moved["silver/late_events_5m"] != 1 {
		t.Errorf("values moved %v, want bronze 3, silver 3, quarantine 1", moved)
	}

	versions := func() map[string]int64 {
		out := map[string]int64{}
		for _, p := range []string{"bronze/events", "silver/events", "silver/late_events_5m"} {
			out[p] = testutil.TableVersion(t, env.Lake, p)
		}
		return out
	}
	before := versions()
	if _, err := BackfillColumns(ctx, env, "events"); err != nil {
		t.Fatal(err)
	}
	if after := versions(); !maps.Equal(before, after) {
		t.Errorf("a second backfill committed: versions %v -> %v", before, after)
	}

	// The stream skips the backfill's commits (dataChange=false) and reads each row once.
	runIngestStream(t, env)
	country := scanColumn(t, env, "silver/events", "event_id", "country")
	if country["new-1"] != "DE" || len(country) != 6 {
		t.Errorf("silver after the backfill and one more batch: %v, want the 5 rows above and new-1 DE", country)
	}
	n := 0
	for b, err := range table.Open(objstore.WithPrefix(env.Lake, "silver/events"), table.Options{}).Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n += b.Len()
	}
	if n != 6 {
		t.Errorf("silver has %d rows, want 6", n)
	}
}

// TestTypeWideningEndToEnd: widening a declared column (qty integer -> long) is refused by
// default, saying why and how to opt in; with schema_evolution.type_widening on, ingest widens
// bronze and the stream silver and the quarantine, each with the typeWidening feature, and the
// rows written before and after keep their values in all three, where merge-late and replay
// read them.
func TestTypeWideningEndToEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	narrow := strings.TrimSuffix(testutil.EventsSchema, "\n") + "\n  - {name: qty, type: integer}\n"
	wide := strings.TrimSuffix(testutil.EventsSchema, "\n") + "\n  - {name: qty, type: long}\n"
	land := func(env Env, key, id, at, qty string) {
		t.Helper()
		landLine(t, env, "landing/events/"+key+".json", `{"event_id":"`+id+`","event_type":"a","amount":1,"event_time":"2024-05-01T`+at+`Z","qty":`+qty+`}`)
		runIngestStream(t, env) // one object per batch: the later ones are late
	}
	env := openEvolving(t, dir, narrow)
	land(env, "a", "a", "12:00:00", "7")
	land(env, "b", "b", "13:00:00", "2147483647")
	land(env, "c", "c", "12:01:00", "-5") // late: the watermark is 12:50
	env.Lake.Close()

	// Default: refused at start by ingest and stream, nothing committed.
	env = openEvolving(t, dir, wide)
	before := testutil.TableVersion(t, env.Lake, "bronze/events")
	_, ingestErr := IngestSources(ctx, env, "", nil)
	_, streamErr := StreamSources(ctx, env, "", config.Trigger{Kind: config.TriggerAvailableNow}, nil)
	for job, err := range map[string]error{"ingest": ingestErr, "stream": streamErr} {
		for _, w := range []string{"column qty changed from {type: integer} to {type: long}", "delta-rs 1.6", "Polars",
			"schema_evolution: {type_widening: true}", "add a new column"} {
			if !errors.Is(err, bronze.ErrSchemaChange) || !strings.Contains(err.Error(), w) {
				t.Errorf("%s without the opt-in: error %v, want bronze.ErrSchemaChange saying %q", job, err, w)
			}
		}
	}
	if after := testutil.TableVersion(t, env.Lake, "bronze/events"); after != before {
		t.Errorf("a refused widening moved bronze from version %d to %d", before, after)
	}
	env.Lake.Close()

	env = openEvolving(t, dir, "schema_evolution: {type_widening: true}\n"+wide)
	defer env.Lake.Close()
	// backfill-columns widens bronze as ingest would, and silver and the quarantine follow it
	// as the stream would; the jobs after it find nothing left to widen.
	if _, err := BackfillColumns(ctx, env, ""); err != nil {
		t.Fatalf("backfill-columns with a widened column: %v", err)
	}
	for _, path := range []string{"bronze/events", "silver/events", "silver/late_events_5m"} {
		snap, err := table.Open(objstore.WithPrefix(env.Lake, path), table.Options{}).Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := snap.Schema(); s.Field("qty").Type.TypeName() != txlog.TypeLong {
			t.Errorf("after backfill-columns %s: qty is %s, want long", path, s.Field("qty").Type.TypeName())
		}
	}
	land(env, "d", "d", "13:30:00", "1099511627776")
	land(env, "e", "e", "12:02:00", "-1099511627776") // late
	want := map[string]map[string]any{
		"bronze/events":         {"a": int64(7), "b": int64(2147483647), "c": int64(-5), "d": int64(1) << 40, "e": -int64(1) << 40},
		"silver/events":         {"a": int64(7), "b": int64(2147483647), "c": int64(-5), "d": int64(1) << 40, "e": -int64(1) << 40},
		"silver/late_events_5m": {"c": int64(-5), "e": -int64(1) << 40},
	}
	for path, rows := range want {
		got := scanColumn(t, env, path, "event_id", "qty")
		if !maps.Equal(got, rows) {
			t.Errorf("%s: qty %v, want %v", path, got, rows)
		}
		snap, err := table.Open(objstore.WithPrefix(env.Lake, path), table.Options{}).Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		schema, _ := snap.Schema()
		p := snap.Protocol()
		if f := schema.Field("qty"); f.Type.TypeName() != txlog.TypeLong ||
			string(f.Metadata["delta.typeChanges"]) != `[{"fromType":"integer","toType":"long"}]` ||
			!slices.Contains(p.ReaderFeatures, "typeWidening") || !slices.Contains(p.WriterFeatures, "typeWidening") {
			t.Errorf("%s: qty is %s with metadata %s, protocol %+v; want long, its type change and typeWidening", path,
				f.Type.TypeName(), f.Metadata["delta.typeChanges"], p)
		}
	}
	// One widening commit per table: a rerun adds none.
	v := testutil.TableVersion(t, env.Lake, "silver/late_events_5m")
	runIngestStream(t, env)
	if got := testutil.TableVersion(t, env.Lake, "silver/late_events_5m"); got != v {
		t.Errorf("an idle rerun moved the quarantine from version %d to %d", v, got)
	}
	if _, err := MergeLateSources(ctx, env, ""); err != nil {
		t.Fatalf("merge-late over the widened quarantine: %v", err)
	}
	from := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	if _, err := ReplaySources(ctx, env, "", late.Range{From: from, To: from.Add(2 * time.Hour)}, nil); err != nil {
		t.Fatalf("replay over the widened silver: %v", err)
	}
	// Gold counts every event of a closed window once: a and b by the stream, the late c and e
	// by merge-late; d's window [13:30, 13:35) is still open (the watermark is 13:20).
	var total int64
	for b, err := range table.Open(objstore.WithPrefix(env.Lake, "gold/events_5m"), table.Options{}).Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		ci := b.Schema.FieldIndex("count")
		for i := range b.Len() {
			total += b.Row(i)[ci].(int64)
		}
	}
	if total != 4 {
		t.Errorf("gold counts %d events, want 4", total)
	}
}

// TestTypeWideningPinnedRefused: a column whose values a query's state keeps (here the column
// of a gold sum) is not widened even with the opt-in: ingest refuses before touching bronze,
// naming the aggregation; and when bronze was widened behind medallion's back (another
// engine's ALTER COLUMN, here table.EvolveWith), the stream refuses before silver follows.
func TestTypeWideningPinnedRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	yaml := func(optIn, qtyType string) string {
		return "lake: " + dir + "\nlanding: {path: landing/events/}\n" + optIn +
			strings.TrimSuffix(testutil.EventsSchema, "\n") + "\n  - {name: qty, type: " + qtyType + "}\n" + `stream: {watermark: 10m, dedup: [event_id]}
gold:
  - name: qty_5m
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: sum, column: qty, as: qty_sum}]
`
	}
	open := func(y string) Env {
		env, err := NewEnv(ctx, testutil.Pipeline(t, y), nil)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	env := open(yaml("", "integer"))
	landLine(t, env, "landing/events/a.json", `{"event_id":"a","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z","qty":3}`)
	runIngestStream(t, env)
	env.Lake.Close()

	env = open(yaml("schema_evolution: {type_widening: true}\n", "long"))
	defer env.Lake.Close()
	before := testutil.TableVersion(t, env.Lake, "bronze/events")
	_, err := IngestSources(ctx, env, "", nil)
	if !errors.Is(err, bronze.ErrSchemaChange) || !strings.Contains(err.Error(), "the column is aggregated by qty_sum of gold qty_5m") ||
		!strings.Contains(err.Error(), "cannot be widened in place") {
		t.Fatalf("ingest: error %v, want a refusal naming gold qty_5m's aggregate", err)
	}
	if after := testutil.TableVersion(t, env.Lake, "bronze/events"); after != before {
		t.Errorf("a refused widening moved bronze from version %d to %d", before, after)
	}

	// Bronze widened by someone else (its declared-schema property too), and the config
	// follows it: only the stream's own check can tell that silver's state keeps qty.
	env.Lake.Close()
	env = open(yaml("", "long"))
	declared, err := DeclaredSchema(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	props, err := bronze.DeclaredSchemaProps(declared)
	if err != nil {
		t.Fatal(err)
	}
	bt := table.Open(objstore.WithPrefix(env.Lake, "bronze/events"), table.Options{})
	if _, err := bt.EvolveWith(ctx, bronze.BronzeSchema(declared), props, table.EvolveOptions{TypeWidening: true}); err != nil {
		t.Fatal(err)
	}
	silverBefore := testutil.TableVersion(t, env.Lake, "silver/events")
	_, err = StreamSources(ctx, env, "", config.Trigger{Kind: config.TriggerAvailableNow}, nil)
	if !errors.Is(err, table.ErrIncompatibleSchema) || !strings.Contains(err.Error(), "column qty is long in bronze and integer in silver silver/events") ||
		!strings.Contains(err.Error(), "an aggregate column of gold qty_5m") {
		t.Fatalf("stream: error %v, want a refusal naming qty and gold qty_5m", err)
	}
	if got := testutil.TableVersion(t, env.Lake, "silver/events"); got != silverBefore {
		t.Errorf("silver moved from version %d to %d under a refused widening", silverBefore, got)
	}
}

// TestTypeWideningConvergesAfterCrash: the first run with the opt-in, failed at its N-th commit
// to any Delta log (before or after the object is stored: each table's widening commit and the
// data commits after it), rerun without faults, gives the tables of an uninterrupted run: each
// of bronze, silver and the quarantine widened by exactly one commit, every qty value kept.
func TestTypeWideningConvergesAfterCrash(t *testing.T) {
	ctx := context.Background()
	template := t.TempDir()
	narrow := strings.TrimSuffix(testutil.EventsSchema, "\n") + "\n  - {name: qty, type: integer}\n"
	wide := "schema_evolution: {type_widening: true}\n" + strings.TrimSuffix(testutil.EventsSchema, "\n") + "\n  - {name: qty, type: long}\n"
	env := openEvolving(t, template, narrow)
	landLine(t, env, "landing/events/a.json", `{"event_id":"old-1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z","qty":-2147483648}`)
	runIngestStream(t, env)
	landLine(t, env, "landing/events/b.json", `{"event_id":"new-1","event_type":"a","amount":2,"event_time":"2024-05-01T12:01:00Z","qty":1099511627776}`)
	env.Lake.Close()
	want := map[string]any{"old-1": int64(-2147483648), "new-1": int64(1) << 40}

	for n := 1; ; n++ {
		fired := false
		for _, after := range []bool{false, true} {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
				t.Fatal(err)
			}
			env := openEvolving(t, dir, wide)
			clean := env.Lake
			faulty := objstore.WithFaults(clean, objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpPutIfAbsent, Nth: n, After: after}}})
			env.Lake = &logOnly{FaultBucket: faulty, clean: clean}
			_, ierr := IngestSources(ctx, env, "", nil)
			if ierr == nil {
				_, ierr = StreamSources(ctx, env, "", config.Trigger{Kind: config.TriggerAvailableNow}, nil)
			}
			fired = fired || faulty.Fired() > 0
			env.Lake = clean
			runIngestStream(t, env)
			for _, path := range []string{"bronze/events", "silver/events", "silver/late_events_5m"} {
				if path != "silver/late_events_5m" {
					if got := scanColumn(t, env, path, "event_id", "qty"); !maps.Equal(got, want) {
						t.Fatalf("fault at commit %d (after=%v, run error %v): %s qty %v, want %v", n, after, ierr, path, got, want)
					}
				}
				if c := operationCommits(t, env, path, "CHANGE COLUMNS"); c != 1 {
					t.Fatalf("fault at commit %d (after=%v): %s has %d CHANGE COLUMNS commits, want 1", n, after, path, c)
				}
			}
			clean.Close()
		}
		if !fired {
			if n < 4 {
				t.Fatalf("only %d commits in the run: the loop tested nothing", n-1)
			}
			t.Logf("a fault at each of the %d log commits of the run converged", n-1)
			return
		}
	}
}

// operationCommits counts the commits of the table at path whose operation is op.
func operationCommits(t *testing.T, env Env, path, op string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for key, err := range env.Lake.List(ctx, path+"/_delta_log/", objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(key.Key, ".json") {
			continue
		}
		data, err := objstore.ReadAll(ctx, env.Lake, key.Key)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(data), `"operation":"`+op+`"`)
	}
	return n
}
