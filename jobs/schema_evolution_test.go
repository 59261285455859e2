package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
)

// evolvingPipeline is a one-source pipeline whose schema block is schema.
func evolvingPipeline(t *testing.T, lake, schema string) *config.Pipeline {
	t.Helper()
	return testutil.Pipeline(t, "lake: "+lake+`
landing: {path: landing/events/}
`+schema+`stream: {watermark: 10m, dedup: [event_id]}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
`)
}

// scanColumn returns, per value of keyCol, the value of col in the table at path (the string
// form of table.Batch.Row's cell; "<nil>" for null) and fails when the table lacks col.
func scanColumn(t *testing.T, env Env, path, keyCol, col string) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	for b, err := range table.Open(objstore.WithPrefix(env.Lake, path)).Scan(ctx, table.ScanOptions{}) {
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
	env, err := NewEnv(ctx, evolvingPipeline(t, dir, testutil.EventsSchema), nil)
	if err != nil {
		t.Fatal(err)
	}
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
	env, err = NewEnv(ctx, evolvingPipeline(t, dir, grown), nil)
	if err != nil {
		t.Fatal(err)
	}
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
			env, err := NewEnv(ctx, evolvingPipeline(t, dir, testutil.EventsSchema), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := objstore.PutBytes(ctx, env.Lake, "landing/events/a.json",
				[]byte(`{"event_id":"e1","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}`+"\n")); err != nil {
				t.Fatal(err)
			}
			runIngestStream(t, env)
			env.Lake.Close()

			env, err = NewEnv(ctx, evolvingPipeline(t, dir, tc.schema(t)), nil)
			if err != nil {
				t.Fatal(err)
			}
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
