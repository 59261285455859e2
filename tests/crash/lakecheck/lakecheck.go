// Package lakecheck holds what the end-to-end reliability tests (tests/crash, tests/faults,
// tests/security) share: building the real medallion binary, running it as a process, writing
// pipeline configs, and checking a lake from the outside with the project's own readers (every
// version of every table, rows as multisets, commit bookkeeping).
//
// It is test support only: it never writes to a lake. After a crash of the test itself nothing
// is left but temporary directories and the binary testshared.Binary keeps for the next run.
package lakecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// BinaryEnv names a prebuilt binary to test instead of building one (e.g. a release build).
const BinaryEnv = "MEDALLION_TEST_BIN"

// Binary returns the medallion binary to run: the one named by BinaryEnv, or cmd/medallion
// built by testshared.Binary (once per test process, linked once per checkout and run).
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinaryEnv); p != "" {
		return p
	}
	return testshared.Binary(t, "./cmd/medallion")
}

// Config is the workload every reliability test runs: the DESIGN.md §8 schema plus a device,
// dedup on event_id, one tumbling and one sliding aggregation. lake is a path or URL; extra is
// appended verbatim (more top-level keys).
func Config(lake, extra string) string {
	return `lake: ` + lake + `
landing: {path: landing/events/, format: json, max_files_per_trigger: 3}
schema:
  - {name: event_id, type: string, required: true}
  - {name: event_type, type: string}
  - {name: amount, type: double}
  - {name: event_time, type: timestamp, required: true}
  - {name: device_id, type: string}
stream: {watermark: 10m, dedup: [event_id], max_files_per_trigger: 2}
gold:
  - name: g5
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count}, {fn: sum, column: amount}]
  - name: s10
    window: {type: sliding, size: 10m, slide: 5m}
    aggregates: [{fn: count}, {fn: max, column: amount}]
` + extra
}

// WriteConfig writes Config(lake, extra) into dir and returns its path.
func WriteConfig(t testing.TB, dir, lake, extra string) string {
	t.Helper()
	p := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(p, []byte(Config(lake, extra)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Tables are the pipeline tables of Config, relative to the lake root.
var Tables = []string{"bronze/events", "bronze/rejects", "silver/events", "silver/late_g5", "silver/late_s10", "gold/g5", "gold/s10"}

// Result is one finished process.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs the binary to completion with env added to the test's environment.
func Run(ctx context.Context, bin string, env []string, args ...string) (Result, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.Code = ee.ExitCode()
		return r, nil
	}
	return r, err
}

// MustRun runs the binary and fails the test unless it exits 0.
func MustRun(t testing.TB, bin string, env []string, args ...string) Result {
	t.Helper()
	r, err := Run(context.Background(), bin, env, args...)
	if err != nil || r.Code != 0 {
		t.Fatalf("medallion %s: exit %d, %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, err, r.Stdout, tail(r.Stderr, 4000))
	}
	return r
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// Rows scans the latest version of the table rooted at b and returns its rows as canonical
// JSON objects (keys sorted, numbers rounded to 12 significant digits), without the columns
// named in drop, sorted: a multiset that two runs can be compared by. The rounding forgives
// the last bits of floating-point sums, whose value depends on the order rows were added in.
func Rows(ctx context.Context, b objstore.Bucket, drop ...string) ([]string, error) {
	var rows []string
	var c canonicalizer
	for batch, err := range table.Open(b, table.Options{}).Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			return nil, fmt.Errorf("lakecheck: scan: %w", err)
		}
		for i := 0; i < batch.Len(); i++ {
			row, err := c.row(batch, i, drop)
			if err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
	}
	sort.Strings(rows)
	return rows, nil
}

// canonicalizer renders rows as Rows does. The text is exactly what decoding the row's JSON
// (pq.AppendJSONRow) into a map with UseNumber, rounding its numbers and json.Marshal give
// (TestCanonicalRowMatchesDecodeAndMarshal holds the two side by side), built column by
// column: the checks of the crash and fault tests scan every table of two lakes, and under
// -race the reflection of the decode-and-marshal round trip was a third of a kill loop's own
// CPU. A value whose text encoding/json would write differently (a string with an escape or
// an HTML character, an array, a map) still takes that round trip.
type canonicalizer struct {
	order  []int  // the batch's columns in key order, dropped ones left out
	names  []byte // the keys, rendered
	nameAt []int  // where each key of order starts in names
	schema *txlog.StructType
	drop   []string
	val    []byte
}

func (c *canonicalizer) row(batch *pq.Batch, i int, drop []string) (string, error) {
	if c.schema != batch.Schema || !slices.Equal(c.drop, drop) {
		if err := c.layout(batch.Schema, drop); err != nil {
			return "", err
		}
	}
	out := make([]byte, 0, 64*len(c.order))
	out = append(out, '{')
	for k, col := range c.order {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, c.names[c.nameAt[k]:c.nameAt[k+1]]...)
		out = append(out, ':')
		var err error
		if out, err = c.value(out, batch.Columns[col], i); err != nil {
			return "", fmt.Errorf("lakecheck: column %s of row %d: %w", batch.Schema.Fields[col].Name, i, err)
		}
	}
	return string(append(out, '}')), nil
}

// value appends row i of column col. A struct (gold's window) is an object of its fields in
// name order, each rendered the same way; any other value goes through appendCanonical.
func (c *canonicalizer) value(dst []byte, col *pq.Column, i int) ([]byte, error) {
	st, ok := col.Type.(*txlog.StructType)
	if !ok || col.Kind == pq.KindNull || col.IsNull(i) {
		c.val = pq.AppendJSONValue(c.val[:0], col, i)
		return appendCanonical(dst, c.val)
	}
	order := make([]int, len(st.Fields))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(st.Fields[a].Name, st.Fields[b].Name) })
	dst = append(dst, '{')
	for n, k := range order {
		if n > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendCanonical(dst, pq.AppendJSONString(c.val[:0], st.Fields[k].Name)); err != nil {
			return dst, err
		}
		dst = append(dst, ':')
		if dst, err = c.value(dst, col.Children[k], i); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// layout orders the columns of schema by name (json.Marshal sorts a map's keys so), leaving
// out those in drop, and renders their keys once.
func (c *canonicalizer) layout(schema *txlog.StructType, drop []string) error {
	c.schema, c.drop = schema, slices.Clone(drop)
	c.order = c.order[:0]
	for k, f := range schema.Fields {
		if !slices.Contains(drop, f.Name) {
			c.order = append(c.order, k)
		}
	}
	slices.SortFunc(c.order, func(a, b int) int { return strings.Compare(schema.Fields[a].Name, schema.Fields[b].Name) })
	c.names, c.nameAt = c.names[:0], append(c.nameAt[:0], 0)
	for _, k := range c.order {
		var err error
		if c.names, err = appendCanonical(c.names, pq.AppendJSONString(nil, schema.Fields[k].Name)); err != nil {
			return err
		}
		c.nameAt = append(c.nameAt, len(c.names))
	}
	return nil
}

// appendCanonical appends the JSON value text v as json.Marshal writes it back after a decode
// with UseNumber and roundNumbers.
func appendCanonical(dst, v []byte) ([]byte, error) {
	switch {
	case len(v) == 0:
		return dst, errors.New("empty value")
	case v[0] == '"' && marshalsAsIs(v):
		return append(dst, v...), nil
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		return append(dst, roundNumber(json.Number(v))...), nil
	case string(v) == "true" || string(v) == "false" || string(v) == "null":
		return append(dst, v...), nil
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return dst, fmt.Errorf("value %q: %w", v, err)
	}
	out, err := json.Marshal(roundNumbers(x))
	if err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}

// marshalsAsIs reports whether the JSON string literal s is what json.Marshal writes for its
// value: no escape (json.Marshal escapes differently from pq: \b, \u0008), no character it
// escapes for HTML (<, >, &), no U+2028 or U+2029. pq.AppendJSONValue already writes invalid
// UTF-8 as U+FFFD, as json.Marshal does.
func marshalsAsIs(s []byte) bool {
	for _, c := range s[1 : len(s)-1] {
		if c == '\\' || c == '<' || c == '>' || c == '&' || c < 0x20 {
			return false
		}
	}
	return !bytes.Contains(s, []byte("\u2028")) && !bytes.Contains(s, []byte("\u2029"))
}

func roundNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = roundNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = roundNumbers(e)
		}
	case json.Number:
		return roundNumber(x)
	}
	return v
}

// roundNumber keeps an integer as it is and rounds any other number to 12 significant digits.
func roundNumber(x json.Number) json.Number {
	if _, err := x.Int64(); err == nil {
		return x
	}
	if f, err := x.Float64(); err == nil {
		return json.Number(strconv.FormatFloat(f, 'g', 12, 64))
	}
	return x
}

// Column returns the values of one column of every row, as JSON texts.
func Column(ctx context.Context, b objstore.Bucket, col string) ([]string, error) {
	var vals []string
	var buf []byte
	for batch, err := range table.Open(b, table.Options{}).Scan(ctx, table.ScanOptions{Columns: []string{col}}) {
		if err != nil {
			return nil, fmt.Errorf("lakecheck: scan %s: %w", col, err)
		}
		c := batch.Column(col)
		for i := 0; i < batch.Len(); i++ {
			buf = pq.AppendJSONValue(buf[:0], c, i)
			vals = append(vals, string(buf))
		}
	}
	return vals, nil
}

// Exists reports whether the table rooted at b has a log.
func Exists(ctx context.Context, b objstore.Bucket) (bool, error) {
	for _, err := range b.List(ctx, "_delta_log/", objstore.ListOptions{}) {
		if err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// LogReport is what CheckLog found in one table's log.
type LogReport struct {
	Versions int // commits, 0..latest
	Txns     int // txn actions seen
}

// CheckLog checks the commit bookkeeping of the table rooted at b: commit files 0..latest are
// contiguous, every version replays (SnapshotAt), no two commits carry the same commitInfo.txnId
// or the same txn (appId, version) (a commit applied twice), and the latest version scans.
func CheckLog(ctx context.Context, b objstore.Bucket) (LogReport, error) {
	var rep LogReport
	var versions []int64
	for obj, err := range b.List(ctx, "_delta_log/", objstore.ListOptions{}) {
		if err != nil {
			return rep, fmt.Errorf("lakecheck: list log: %w", err)
		}
		name := strings.TrimPrefix(obj.Key, "_delta_log/")
		if len(name) == 25 && strings.HasSuffix(name, ".json") {
			var v int64
			if _, err := fmt.Sscanf(name[:20], "%d", &v); err != nil {
				return rep, fmt.Errorf("lakecheck: log name %s: %w", obj.Key, err)
			}
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	for i, v := range versions {
		if v != int64(i) {
			return rep, fmt.Errorf("lakecheck: commits not contiguous: version %d at position %d", v, i)
		}
	}
	log := txlog.New(b, txlog.Options{})
	txnIDs := map[string]int64{}
	txns := map[string]int64{}
	for _, v := range versions {
		if _, err := log.SnapshotAt(ctx, v); err != nil {
			return rep, fmt.Errorf("lakecheck: version %d does not replay: %w", v, err)
		}
		data, err := objstore.ReadAll(ctx, b, txlog.CommitKey(v))
		if err != nil {
			return rep, err
		}
		actions, err := txlog.ParseActions(data)
		if err != nil {
			return rep, fmt.Errorf("lakecheck: commit %d: %w", v, err)
		}
		for _, a := range actions {
			if a.CommitInfo != nil && a.CommitInfo.TxnID != "" {
				if prev, dup := txnIDs[a.CommitInfo.TxnID]; dup {
					return rep, fmt.Errorf("lakecheck: txnId %s committed twice (versions %d and %d)", a.CommitInfo.TxnID, prev, v)
				}
				txnIDs[a.CommitInfo.TxnID] = v
			}
			if a.Txn != nil {
				k := fmt.Sprintf("%s/%d", a.Txn.AppID, a.Txn.Version)
				if prev, dup := txns[k]; dup {
					return rep, fmt.Errorf("lakecheck: txn %s committed twice (versions %d and %d)", k, prev, v)
				}
				txns[k] = v
				rep.Txns++
			}
		}
	}
	rep.Versions = len(versions)
	if len(versions) > 0 {
		if _, err := Rows(ctx, b); err != nil {
			return rep, fmt.Errorf("lakecheck: latest version %d: %w", len(versions)-1, err)
		}
	}
	return rep, nil
}

// Diff describes how two sorted multisets differ (empty when equal), naming a few rows.
func Diff(want, got []string) string {
	if len(want) == len(got) {
		same := true
		for i := range want {
			if want[i] != got[i] {
				same = false
				break
			}
		}
		if same {
			return ""
		}
	}
	count := map[string]int{}
	for _, r := range want {
		count[r]++
	}
	for _, r := range got {
		count[r]--
	}
	var missing, extra []string
	for r, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, r)
		}
		for ; n < 0; n++ {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return fmt.Sprintf("%d rows want, %d got; missing %d (first: %v); extra %d (first: %v)",
		len(want), len(got), len(missing), first(missing, 3), len(extra), first(extra, 3))
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Verify checks the lake testLake (crashed, faulted, raced) against the invariants and the lake
// cleanLake (an uninterrupted run of the same workload): every version of every table replays,
// commits are contiguous and no txn was applied twice, invariant A holds (from the tables),
// silver has each dedup key once, each quarantine is a subset of silver, and bronze, rejects,
// silver and gold equal the clean run's as multisets (minus per-run columns). lines is the
// number of landing lines. open opens a table of a lake. It returns how many checks passed.
func Verify(t testing.TB, open func(lake, table string) objstore.Bucket, cleanLake, testLake string, lines int) int {
	t.Helper()
	ctx := context.Background()
	checks := 0
	ok := func(cond bool, format string, args ...any) {
		t.Helper()
		if !cond {
			t.Errorf(format, args...)
			return
		}
		checks++
	}

	// Every version of every table replays; commits contiguous; no txn applied twice.
	for _, lake := range []string{testLake, cleanLake} {
		for _, tbl := range Tables {
			rep, err := CheckLog(ctx, open(lake, tbl))
			ok(err == nil, "%s %s: %v", lake, tbl, err)
			ok(rep.Versions > 0 || strings.HasPrefix(tbl, "silver/late"), "%s %s: no versions", lake, tbl)
		}
	}

	bronzeKeys, err := Rows(ctx, open(testLake, "bronze/events"), "event_id", "event_type", "amount", "event_time", "device_id", "_rescued_data", "_ingest_time")
	ok(err == nil, "bronze: %v", err)
	rejects, err := Rows(ctx, open(testLake, "bronze/rejects"), "rejected_at", "error")
	ok(err == nil, "rejects: %v", err)
	ingestRejects, validationRejects := 0, 0
	for _, r := range rejects {
		if strings.Contains(r, `"stage":"ingest"`) {
			ingestRejects++
		} else {
			validationRejects++
		}
	}
	// Invariant A, first half: every landing line once, in bronze or in rejects. A line is
	// identified by (source file, offset), so a batch ingested twice shows up as a duplicate.
	ok(len(bronzeKeys)+ingestRejects == lines, "invariant A: landing lines %d != bronze %d + ingest rejects %d", lines, len(bronzeKeys), ingestRejects)
	ok(noDuplicates(bronzeKeys), "bronze holds a landing line twice")

	silverIDs, err := Column(ctx, open(testLake, "silver/events"), "event_id")
	ok(err == nil, "silver: %v", err)
	ok(noDuplicates(silverIDs), "silver holds a dedup key twice")
	inSilver := map[string]bool{}
	for _, id := range silverIDs {
		inSilver[id] = true
	}
	// Invariant A, second half: bronze = silver + validation rejects + duplicates dropped, with
	// the duplicates counted from the tables: bronze rows whose key is in silver, minus silver.
	bronzeIDs, err := Column(ctx, open(testLake, "bronze/events"), "event_id")
	ok(err == nil, "bronze ids: %v", err)
	withKeyInSilver := 0
	for _, id := range bronzeIDs {
		if inSilver[id] {
			withKeyInSilver++
		}
	}
	dups := withKeyInSilver - len(silverIDs)
	ok(len(bronzeIDs) == len(silverIDs)+validationRejects+dups,
		"invariant A: bronze %d != silver %d + validation rejects %d + duplicates %d", len(bronzeIDs), len(silverIDs), validationRejects, dups)

	for _, q := range []string{"silver/late_g5", "silver/late_s10"} {
		ids, err := Column(ctx, open(testLake, q), "event_id")
		ok(err == nil, "%s: %v", q, err)
		missing := 0
		for _, id := range ids {
			if !inSilver[id] {
				missing++
			}
		}
		ok(missing == 0, "%s: %d of %d rows are not in silver", q, missing, len(ids))
		ok(noDuplicates(ids), "%s holds a row twice", q)
	}

	// Same tables as the clean run, as multisets, minus what legitimately differs per run.
	// Ingest spreads a batch's objects over one file per core as the workers finish, and the
	// stream's max_files_per_trigger counts those files, so even two uninterrupted runs cut
	// micro-batches differently: which resend of a duplicate wins (its lineage columns), which
	// rows were judged late (quarantine, gold's late_rows) vary; after merge-late, the
	// aggregates themselves must not.
	compare := []struct {
		table string
		drop  []string
	}{
		{"gold/g5", []string{"late_rows"}},
		{"gold/s10", []string{"late_rows"}},
		{"silver/events", []string{"_ingest_time", "_source_file", "_source_offset"}},
		{"bronze/events", []string{"_ingest_time"}},
		{"bronze/rejects", []string{"rejected_at", "raw", "error"}},
	}
	for _, c := range compare {
		want, err := Rows(ctx, open(cleanLake, c.table), c.drop...)
		ok(err == nil, "clean %s: %v", c.table, err)
		got, err := Rows(ctx, open(testLake, c.table), c.drop...)
		ok(err == nil, "tested %s: %v", c.table, err)
		d := Diff(want, got)
		ok(d == "", "%s differs from the clean run: %s", c.table, d)
		if strings.HasPrefix(c.table, "gold/") {
			ok(len(want) > 0, "%s of the clean run is empty: the workload proves nothing", c.table)
		}
	}
	return checks
}

func noDuplicates(s []string) bool {
	seen := make(map[string]struct{}, len(s))
	for _, v := range s {
		if _, dup := seen[v]; dup {
			return false
		}
		seen[v] = struct{}{}
	}
	return true
}
