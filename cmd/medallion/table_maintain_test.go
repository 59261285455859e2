package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// tableCLI runs the CLI and returns its output and exit code.
func tableCLI(args ...string) (string, int) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(args)
	code := exitCode(root.Execute())
	return out.String(), code
}

func TestTableOptimizeAndVacuumCLI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := txlog.ParseSchema(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`)
	tbl := table.Open(b, table.Options{})
	if _, err := tbl.Create(ctx, schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		bt, _ := pq.NewBatch(schema)
		bt.Columns[0].AppendInt64(int64(i))
		if _, err := tbl.Append(ctx, []*pq.Batch{bt}, table.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out, code := tableCLI("table", "optimize", dir)
	if code != 0 || !strings.Contains(out, "3 files") || !strings.Contains(out, "into 1 file (") {
		t.Errorf("optimize: exit %d, said %q", code, out)
	}
	if _, code := tableCLI("table", "vacuum", dir, "--retain", "1h"); code != 2 {
		t.Errorf("short retention without --force: exit %d, want 2", code)
	}
	if out, code := tableCLI("table", "vacuum", dir, "--retain", "1ns", "--force", "--dry-run"); code != 0 || !strings.Contains(out, "dry run: 3 files") {
		t.Errorf("dry run: exit %d, said %q", code, out)
	}
	if out, code := tableCLI("table", "vacuum", dir, "--retain", "1ns", "--force"); code != 0 || !strings.Contains(out, "deleted 3 files") {
		t.Errorf("vacuum: exit %d, said %q", code, out)
	}
	n := 0
	for bt, err := range tbl.Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n += bt.Len()
	}
	if n != 3 {
		t.Errorf("%d rows after vacuum", n)
	}
}
