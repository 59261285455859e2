package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore/bucketurl"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

const eventsSchema = `{"type":"struct","fields":[` +
	`{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"name","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"amount","type":"double","nullable":true,"metadata":{}}]}`

const typesSchema = `{"type":"struct","fields":[` +
	`{"name":"b","type":"byte","nullable":true,"metadata":{}},` +
	`{"name":"f","type":"float","nullable":true,"metadata":{}},` +
	`{"name":"dec","type":"decimal(10,2)","nullable":true,"metadata":{}},` +
	`{"name":"bin","type":"binary","nullable":true,"metadata":{}},` +
	`{"name":"day","type":"date","nullable":true,"metadata":{}},` +
	`{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},` +
	`{"name":"st","type":{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
	`{"name":"arr","type":{"type":"array","elementType":"long","containsNull":true},"nullable":true,"metadata":{}},` +
	`{"name":"m","type":{"type":"map","keyType":"string","valueType":"integer","valueContainsNull":true},"nullable":true,"metadata":{}}]}`

func mustSchema(t *testing.T, s string) *txlog.StructType {
	t.Helper()
	schema, err := txlog.ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

func TestReadRowsRejectsWhatDoesNotFit(t *testing.T) {
	schema := mustSchema(t, typesSchema)
	for _, tc := range []struct{ name, line, want string }{
		{"byte overflow", `{"b": 128}`, "overflows byte"},
		{"float out of range", `{"f": 1e39}`, "column f"},
		{"decimal scale", `{"dec": "1.005"}`, "1.005"},
		{"binary not base64", `{"bin": "%%"}`, "column bin: base64"},
		{"date form", `{"day": "2024/01/01"}`, "column day: YYYY-MM-DD"},
		{"timestamp without zone", `{"ts": "2024-01-01T00:00:00"}`, "column ts"},
		{"ntz with zone", `{"ntz": "2024-01-01T00:00:00Z"}`, "column ntz"},
		{"unknown column", `{"zz": 1}`, `unknown column "zz"`},
		{"unknown struct field", `{"st": {"a": 1, "q": 2}}`, "column st"},
		{"null map key", `{"m": [[null, 1]]}`, "null map key"},
		{"map pair shape", `{"m": [["k"]]}`, "pairs"},
		{"not an object", `[1]`, "not a JSON object"},
		{"trailing text", `{} {}`, "text after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readRows(strings.NewReader("{}\n"+tc.line+"\n"), "in.jsonl", schema)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "in.jsonl:2") {
				t.Fatalf("err = %v, want one naming in.jsonl:2 and %q", err, tc.want)
			}
		})
	}
}

func TestReadRowsValues(t *testing.T) {
	schema := mustSchema(t, typesSchema)
	in := `{"b": -128, "f": 1.5, "dec": "-99999999.99", "bin": "AP8Q", "day": "1900-01-01",` +
		` "ts": "1969-12-31T23:59:59.999999Z", "ntz": "2024-02-29T12:00:00", "st": {"a": 7},` +
		` "arr": [1, null], "m": [["k", 1], ["z", null]]}` + "\n\n" + `{}` + "\n"
	b, err := readRows(strings.NewReader(in), "in", schema)
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != 2 {
		t.Fatalf("%d rows, want 2 (blank lines skipped)", b.Len())
	}
	want := map[string]string{
		"b": "-128", "f": "1.5", "dec": "-99999999.99", "bin": "[0 255 16]",
		"day": "1900-01-01 00:00:00 +0000 UTC", "ts": "1969-12-31 23:59:59.999999 +0000 UTC",
		"ntz": "2024-02-29 12:00:00 +0000 UTC", "st": "[{a 7}]", "arr": "[1 <nil>]",
		"m": "[{k 1} {z <nil>}]",
	}
	for i, f := range schema.Fields {
		if got := fmt.Sprint(b.Columns[i].Value(0)); got != want[f.Name] {
			t.Errorf("%s = %s, want %s", f.Name, got, want[f.Name])
		}
		if !b.Columns[i].IsNull(1) {
			t.Errorf("%s of {} is not null", f.Name)
		}
	}
}

// TestOperationsRoundTrip runs the subcommands on a file table and reads it back with the table
// package: the rows expected are written out by hand here.
func TestOperationsRoundTrip(t *testing.T) {
	ctx := context.Background()
	url := "file://" + filepath.ToSlash(t.TempDir())
	step := func(stdin string, args ...string) {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, args, strings.NewReader(stdin), &out); err != nil {
			t.Fatalf("mkdelta %v: %v", args, err)
		}
	}
	step("", "create", url, "--schema", eventsSchema)
	step(`{"id": 1, "name": "a", "amount": 1.5}`+"\n"+`{"id": 2, "name": "b", "amount": 2.5}`, "append", url, "--each")
	step(`{"id": 3, "name": "c", "amount": 3.5}`, "append", url)
	step(`{"id": 2, "name": "B"}`, "overwrite", url, "--where", "id >= 2", "--where", "id <= 2")
	step(`{"id": 1, "name": "x", "op": "delete"}`+"\n"+`{"id": 3, "name": "C", "op": "update"}`+"\n"+
		`{"id": 4, "name": "d", "amount": 4.5, "op": "insert"}`, "merge", url, "--key", "id", "--set", "name")
	step("", "optimize", url)
	step("", "checkpoint", url, "--drop-commits")
	step("", "vacuum", url)

	b, err := bucketurl.Open(ctx, url, bucketurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tbl := table.Open(b, table.Options{})
	var got []string
	for batch, err := range tbl.Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range batch.Len() {
			got = append(got, string(pq.AppendJSONRow(nil, batch, i)))
		}
	}
	want := map[string]bool{
		`{"id":2,"name":"B","amount":null}`: true,
		`{"id":3,"name":"C","amount":3.5}`:  true,
		`{"id":4,"name":"d","amount":4.5}`:  true,
	}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for _, r := range got {
		if !want[r] {
			t.Errorf("unexpected row %s (want %v)", r, want)
		}
	}
	if _, err := b.Stat(ctx, txlog.CommitKey(0)); err == nil {
		t.Error("commit 0 still present after checkpoint --drop-commits")
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{}, {"create"}, {"frobnicate", dir}, {"create", dir},
		{"overwrite", dir, "--where", "id ~ 3"}, {"append", dir, "extra"},
	} {
		err := run(context.Background(), args, strings.NewReader(""), &bytes.Buffer{})
		if !errors.Is(err, errUsage) {
			t.Errorf("mkdelta %q: err = %v, want a usage error", args, err)
		}
	}
}

func FuzzReadRows(f *testing.F) {
	for _, seed := range []string{
		`{"b": 1, "f": 2.5, "dec": "3.10", "bin": "", "day": "2024-01-01"}`,
		`{"ts": "2024-01-01T00:00:00.5Z", "ntz": "2024-01-01T00:00:00", "st": {"a": null}}`,
		`{"arr": [], "m": {"k": 1}}`, `{"m": [["a", 2]]}`, `null`, `{"b": "x"}`, `{`,
	} {
		f.Add(seed)
	}
	schema, err := txlog.ParseSchema(typesSchema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		b, err := readRows(strings.NewReader(in), "fuzz", schema)
		if err != nil {
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("accepted %q into an invalid batch: %v", in, err)
		}
	})
}
