package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// changesTable makes a table partitioned by part with the feed on (or off): v1 appends
// (1,a,x) and (2,b,y), v2 appends (3,c,x), v3 deletes v2's file by hand (a DELETE without
// change files, as a writer without deletion vectors commits it). Commit k is dated
// 2026-01-02T03:0k:00Z. It returns the table's folder and v2's data file.
func changesTable(t *testing.T, feed bool) (string, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	b, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := txlog.ParseSchema(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"part","type":"string","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	if feed {
		props[table.ChangeFeedProperty] = "true"
	}
	tbl := table.Open(b, table.Options{})
	if _, err := tbl.Create(ctx, schema, []string{"part"}, props); err != nil {
		t.Fatal(err)
	}
	var v2 *txlog.Add
	for _, rows := range [][][3]any{{{1, "a", "x"}, {2, "b", "y"}}, {{3, "c", "x"}}} {
		batch, err := pq.NewBatch(schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			batch.Columns[0].AppendInt64(int64(r[0].(int)))
			batch.Columns[1].AppendString(r[1].(string))
			batch.Columns[2].AppendString(r[2].(string))
		}
		res, err := tbl.Append(ctx, []*pq.Batch{batch}, table.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v2 = res.Added[0]
	}
	data, err := txlog.MarshalActions([]txlog.Action{{CommitInfo: &txlog.CommitInfo{Operation: "DELETE"}}, {Remove: tbl.RemoveOf(v2, true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, txlog.CommitKey(3)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for v := int64(0); v <= 3; v++ {
		at := time.Date(2026, 1, 2, 3, int(v), 0, 0, time.UTC)
		if err := os.Chtimes(filepath.Join(dir, txlog.CommitKey(v)), at, at); err != nil {
			t.Fatal(err)
		}
	}
	return dir, v2.Path
}

func changesCLI(args ...string) (stdout string, code int, stderr string) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		stderr = (&oneLineError{err}).Error()
	}
	return out.String(), exitCode(err), stderr
}

// TestTableChangesCLI: jsonl prints the change rows (table columns, then Spark's three) of the
// versions asked for, --from-timestamp starts at the first version at or after it, and --format
// table aligns the same rows under a header. Expected lines are written by hand from what
// changesTable committed.
func TestTableChangesCLI(t *testing.T) {
	dir, _ := changesTable(t, true)
	v1 := []string{
		`{"id":1,"name":"a","part":"x","_change_type":"insert","_commit_version":1,"_commit_timestamp":"2026-01-02T03:01:00Z"}`,
		`{"id":2,"name":"b","part":"y","_change_type":"insert","_commit_version":1,"_commit_timestamp":"2026-01-02T03:01:00Z"}`,
	}
	v2 := `{"id":3,"name":"c","part":"x","_change_type":"insert","_commit_version":2,"_commit_timestamp":"2026-01-02T03:02:00Z"}`
	v3 := `{"id":3,"name":"c","part":"x","_change_type":"delete","_commit_version":3,"_commit_timestamp":"2026-01-02T03:03:00Z"}`
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--from-version", "0"}, append(slices.Clone(v1), v2, v3)},
		{[]string{"--from-version", "2", "--to-version", "2"}, []string{v2}},
		{[]string{"--from-version", "1", "--to-version", "99"}, append(slices.Clone(v1), v2, v3)},
		{[]string{"--from-timestamp", "2026-01-02T03:01:30Z"}, []string{v2, v3}},
	} {
		out, code, stderr := changesCLI(append([]string{"table", "changes", dir}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		got := strings.Split(strings.TrimSpace(out), "\n")
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%v:\n got %s\nwant %s", c.args, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
	}
	out, code, stderr := changesCLI("table", "changes", dir, "--from-version", "3", "--format", "table")
	want := "id  name  part  _change_type  _commit_version  _commit_timestamp\n" +
		"3   c     x     delete        3                2026-01-02T03:03:00Z\n"
	if code != 0 || out != want {
		t.Errorf("--format table: exit %d %s\n got %q\nwant %q", code, stderr, out, want)
	}
	// Version 0 (the table's creation) changes no row: the header alone, and no jsonl line.
	out, code, stderr = changesCLI("table", "changes", dir, "--from-version", "0", "--to-version", "0", "--format", "table")
	if want := "id  name  part  _change_type  _commit_version  _commit_timestamp\n"; code != 0 || out != want {
		t.Errorf("no changes, --format table: exit %d %s\n got %q\nwant %q", code, stderr, out, want)
	}
	if out, code, stderr := changesCLI("table", "changes", dir, "--from-version", "0", "--to-version", "0"); code != 0 || out != "" {
		t.Errorf("no changes, jsonl: exit %d %s, got %q", code, stderr, out)
	}
}

// TestTableChangesCLIErrors: a bad command line exits 2; a feed that was off, a file vacuum
// deleted and a version out of range exit 1 with a message that names the version or file.
func TestTableChangesCLIErrors(t *testing.T) {
	dir, v2file := changesTable(t, true)
	off, _ := changesTable(t, false)
	for _, args := range [][]string{
		{"table", "changes", dir},
		{"table", "changes", dir, "--from-version", "1", "--from-timestamp", "2026-01-02T03:01:00Z"},
		{"table", "changes", dir, "--from-version", "2", "--to-version", "1"},
		{"table", "changes", dir, "--from-timestamp", "yesterday"},
		{"table", "changes", dir, "--from-version", "0", "--format", "csv"},
	} {
		if _, code, stderr := changesCLI(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args[3:], code, stderr)
		}
	}
	if err := os.Remove(filepath.Join(dir, v2file)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{off, "--from-version", "1"}, "change data feed is not enabled at version 1"},
		{[]string{dir, "--from-version", "3"}, v2file},
		{[]string{dir, "--from-version", "4"}, "start version 4 is after the latest version 3"},
		{[]string{dir, "--from-timestamp", "2026-01-02T04:00:00Z"}, "after the latest commit (version 3"},
	} {
		out, code, stderr := changesCLI(append([]string{"table", "changes"}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.msg) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 naming %q", c.args[1:], code, out, stderr, c.msg)
		}
	}
}
