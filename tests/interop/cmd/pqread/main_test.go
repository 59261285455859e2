package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

const testSchema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":false,"metadata":{}},` +
	`{"name":"s","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"f","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"d","type":"decimal(20,2)","nullable":true,"metadata":{}},` +
	`{"name":"b","type":"boolean","nullable":true,"metadata":{}},` +
	`{"name":"li","type":{"type":"array","elementType":"integer","containsNull":true},"nullable":true,"metadata":{}}]}`

func testBatch(t *testing.T, schema *txlog.StructType, rows int) *pq.Batch {
	t.Helper()
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		b.Columns[0].AppendInt64(int64(i))
		if i%3 == 0 {
			b.Columns[1].AppendNull()
			b.Columns[2].AppendNull()
			b.Columns[3].AppendNull()
			b.Columns[4].AppendNull()
			b.Columns[5].AppendNull()
			continue
		}
		b.Columns[1].AppendString(strings.Repeat("x", i%5) + "'")
		b.Columns[2].AppendFloat64(float64(i) / 4)
		b.Columns[3].AppendDecimal(pq.DecimalFromInt64(int64(-i * 1000)))
		b.Columns[4].AppendBool(i%2 == 0)
		for k := range i % 3 {
			b.Columns[5].Children[0].AppendInt32(int32(k))
		}
		b.Columns[5].AppendList()
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, schema *txlog.StructType, b *pq.Batch) string {
	t.Helper()
	data, _, err := pq.EncodeFile(schema, []*pq.Batch{b}, pq.WriteOptions{RowGroupRows: 7})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readManifest(t *testing.T, dir string) manifest {
	t.Helper()
	js, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEveryPathDumpsTheRowsWritten(t *testing.T) {
	schema, err := txlog.ParseSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, schema, testBatch(t, schema, 20))
	out := t.TempDir()
	var stdout bytes.Buffer
	err = run(context.Background(), []string{path, "--schema", testSchema, "--out", out,
		"--columns", "s,id", "--where", "id >= 5 AND (s IS NULL OR s != 'x''')", "--readwith-passes", "2"}, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	var report map[string]map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	// id >= 5 (15 rows), minus the rows whose s is exactly x' (i%5 == 1 and i%3 != 0: 11, 16).
	wantRows := map[string]float64{"decode": 20, "read": 20, "readwith": 20, "project": 20, "filter": 13, "project_filter": 13}
	for p, n := range wantRows {
		if report[p]["rows"] != n {
			t.Errorf("path %s: %v rows, want %v (report %v)", p, report[p]["rows"], n, report[p])
		}
	}
	m := readManifest(t, filepath.Join(out, "read"))
	if got := m.Batches; len(got) != 3 || got[0] != 7 || got[2] != 6 {
		t.Errorf("read batches %v, want [7 7 6]", got)
	}
	// Column s: validity, int32 offsets, data.
	dir := filepath.Join(out, "read")
	valid, _ := os.ReadFile(filepath.Join(dir, "c1.valid"))
	offs, _ := os.ReadFile(filepath.Join(dir, "c1.offsets"))
	data, _ := os.ReadFile(filepath.Join(dir, "c1.data"))
	if len(valid) != 20 || valid[0] != 0 || valid[1] != 1 || len(offs) != 21*4 {
		t.Fatalf("s: %d validity bytes (%v), %d offset bytes", len(valid), valid[:3], len(offs))
	}
	o := func(i int) uint32 { return binary.LittleEndian.Uint32(offs[4*i:]) }
	if got := string(data[o(2):o(3)]); got != "xx'" {
		t.Errorf("s[2] = %q, want xx'", got)
	}
	// Column f: float64 bits; d: low word then high word.
	vals, _ := os.ReadFile(filepath.Join(dir, "c2.values"))
	if got := math.Float64frombits(binary.LittleEndian.Uint64(vals[8*5:])); got != 1.25 {
		t.Errorf("f[5] = %v, want 1.25", got)
	}
	dec, _ := os.ReadFile(filepath.Join(dir, "c3.values"))
	lo, hi := binary.LittleEndian.Uint64(dec[16*4:]), int64(binary.LittleEndian.Uint64(dec[16*4+8:]))
	if int64(lo) != -4000 || hi != -1 {
		t.Errorf("d[4] = (lo %d, hi %d), want -4000 sign-extended", int64(lo), hi)
	}
	// The list column has its elements as child c5.0 with its own row count (i%3 per row).
	if c := m.Columns[5]; c.Kind != "list" || len(c.Children) != 1 || c.Children[0].Rows != 19 {
		t.Errorf("list column manifest %+v", c)
	}
	pm := readManifest(t, filepath.Join(out, "project"))
	if len(pm.Columns) != 2 || pm.Columns[0].Name != "s" || pm.Columns[1].Name != "id" {
		t.Errorf("project columns %+v", pm.Columns)
	}
}

func TestAFailingPathIsReportedAndTheOthersRun(t *testing.T) {
	schema, err := txlog.ParseSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, schema, testBatch(t, schema, 5))
	// id as a string cannot be read from an INT64 column: every path fails, each reported.
	bad := strings.Replace(testSchema, `"name":"id","type":"long"`, `"name":"id","type":"string"`, 1)
	var stdout bytes.Buffer
	err = run(context.Background(), []string{path, "--schema", bad, "--out", t.TempDir()}, &stdout)
	if err == nil || !strings.Contains(err.Error(), "path decode") || !strings.Contains(err.Error(), "path readwith") {
		t.Fatalf("err = %v", err)
	}
	var report map[string]map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	if _, ok := report["read"]["error"]; !ok {
		t.Errorf("report %v has no error for read", report)
	}
}

func TestParseWhere(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Literals reach sqlexpr.Cmp as text, which String quotes.
		{"a = 1", "a = '1'"},
		{"a IS NULL", "a IS NULL"},
		{"a is not null", "a IS NOT NULL"},
		{"a != 'x y'", "NOT (a = 'x y')"},
		{"a IN (1, 2,3)", "a IN ('1', '2', '3')"},
		{"(a < -1.5e-07 OR b >= 'it''s') AND NOT c <= 2024-01-01T00:00:00.000001Z",
			`(a < '-1.5e-07' OR b >= 'it\'s') AND NOT (c <= '2024-01-01T00:00:00.000001Z')`},
	} {
		e, err := parseWhere(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := e.String(); got != tc.want {
			t.Errorf("%q parsed as %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "a", "a =", "a = 'x", "(a = 1", "a = 1 b", "a ! 1", "'a' = 1", "a IN (1"} {
		if _, err := parseWhere(bad); !errors.Is(err, errUsage) {
			t.Errorf("%q: err = %v, want a usage error", bad, err)
		}
	}
}

func TestGenDumpsWhatItWrote(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "g.parquet")
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"gen", "--seed", "3", "--rows", "3000", "--file", file,
		"--dump", filepath.Join(dir, "d"), "--nested"}, &stdout); err != nil {
		t.Fatal(err)
	}
	schemaJSON, err := os.ReadFile(filepath.Join(dir, "d", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	stdout.Reset()
	if err := run(context.Background(), []string{file, "--schema", string(schemaJSON), "--out", out, "--paths", "decode"}, &stdout); err != nil {
		t.Fatal(err)
	}
	// Our reader's dump of our file equals the generated dump, file for file.
	gen, read := filepath.Join(dir, "d", "generated"), filepath.Join(out, "decode")
	entries, err := os.ReadDir(gen)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "manifest.json" || strings.HasSuffix(e.Name(), ".values") {
			continue // null rows may hold different values; the Python suite compares those
		}
		a, _ := os.ReadFile(filepath.Join(gen, e.Name()))
		b, err := os.ReadFile(filepath.Join(read, e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the generated rows and the read (%v)", e.Name(), err)
		}
	}
}
