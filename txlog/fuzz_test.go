package txlog

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func addFixtureSeeds(f *testing.F, pattern string) {
	files, err := filepath.Glob(filepath.Join(fixtureRoot(f), pattern))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzParseActions: any input parses or fails with an error; what parses survives a
// marshal/parse round trip unchanged (paths included, through their URI encoding).
func FuzzParseActions(f *testing.F) {
	addFixtureSeeds(f, "*/*/_delta_log/0000000000000000000[0-4].json")
	addFixtureSeeds(f, "delta-rs/delta-0.8.0-special-partition/_delta_log/*.json")
	f.Add([]byte(`{"add":{"path":"a%2","partitionValues":{},"size":1}}`))
	f.Add([]byte(`{"remove":{"path":""}}` + "\n" + `{"unknown":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		actions, err := ParseActions(data)
		if err != nil {
			return
		}
		out, err := MarshalActions(actions)
		if err != nil {
			t.Fatalf("marshal parsed actions: %v", err)
		}
		again, err := ParseActions(out)
		if err != nil {
			t.Fatalf("reparse: %v\n%s", err, out)
		}
		known, again := knownActions(actions), knownActions(again)
		if len(known) != len(again) {
			t.Fatalf("round trip: %d actions, then %d", len(known), len(again))
		}
		for i := range known {
			if a, b := known[i].Add, again[i].Add; a != nil && (b == nil || a.Path != b.Path || a.RawPath() != b.RawPath()) {
				t.Fatalf("add path round trip: %+v vs %+v", a, b)
			}
		}
	})
}

// knownActions drops actions of unknown types (all fields nil).
func knownActions(actions []Action) []Action {
	var out []Action
	for _, a := range actions {
		if !reflect.DeepEqual(a, Action{}) {
			out = append(out, a)
		}
	}
	return out
}

// FuzzCheckpointParquet: a corrupt checkpoint is an error, never a panic.
func FuzzCheckpointParquet(f *testing.F) {
	addFixtureSeeds(f, "*/*/_delta_log/*.checkpoint*.parquet")
	f.Add([]byte("PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		actions, err := parseCheckpointParquet(data)
		if err == nil {
			for _, a := range actions {
				if a.Add != nil && a.Add.Path == "" {
					t.Fatal("add without path accepted")
				}
			}
		}
	})
}

// FuzzParseLogName: classification never panics and round-trips the names it accepts.
func FuzzParseLogName(f *testing.F) {
	for _, s := range []string{CommitKey(3), CheckpointKey(10), LogDir + "00000000000000000001.checkpoint.0000000001.0000000002.parquet",
		LogDir + "00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json", LogDir + ".tmp/00000000000000000005.json", LogDir + "_last_checkpoint"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		lf := parseLogName(key)
		switch lf.kind {
		case kindCommit:
			if CommitKey(lf.version) != key {
				t.Fatalf("%q parsed as commit %d", key, lf.version)
			}
		case kindCheckpointClassic:
			if CheckpointKey(lf.version) != key {
				t.Fatalf("%q parsed as checkpoint %d", key, lf.version)
			}
		}
	})
}

// FuzzParseSchema: any schemaString parses or fails cleanly; what parses survives
// MarshalSchema and a second parse unchanged.
func FuzzParseSchema(f *testing.F) {
	for _, table := range []string{"delta-golden/data-reader-partition-values", "delta-golden/data-reader-primitives", "delta-rs/checkpoint-v2-table"} {
		snap, err := New(memFixture(f, table), Options{}).SnapshotAt(f.Context(), 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(snap.Metadata().SchemaString)
	}
	f.Add(`{"type":"struct","fields":[{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"decimal(38, 2)","containsNull":false},"valueContainsNull":true},"nullable":true,"metadata":{"k":[1]}}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseSchema(s)
		if err != nil {
			return
		}
		out, err := MarshalSchema(st)
		if err != nil {
			t.Fatalf("marshal parsed schema: %v", err)
		}
		again, err := ParseSchema(out)
		if err != nil {
			t.Fatalf("reparse %s: %v", out, err)
		}
		out2, err := MarshalSchema(again)
		if err != nil || out2 != out {
			t.Fatalf("round trip changed the schema:\n%s\n%s", out, out2)
		}
	})
}
