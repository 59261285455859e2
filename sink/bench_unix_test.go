//go:build unix

package sink

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

// cpuTime is the process's CPU time so far (user + system): benchmarks report CPU per op, which
// a loaded machine disturbs far less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchChangeSet is a version of n change rows: n/2 updated windows (pre/post pairs).
func benchChangeSet(b *testing.B, n int) table.ChangeSet {
	rows := make([]string, 0, n)
	for i := range n / 2 {
		typ := []string{"click", "view", "buy"}[i%3]
		rows = append(rows, fmt.Sprintf("%d|%s|%d|update_preimage", i, typ, i), fmt.Sprintf("%d|%s|%d|update_postimage", i, typ, i+1))
	}
	t := &testing.T{}
	cs := changeSet(t, rows...)
	if t.Failed() {
		b.Fatal("change set")
	}
	return cs
}

// BenchmarkEncodeVersion: the records of a 10,000-row version (5,000 updated windows).
// Compare with BenchmarkJSONRowsBaseline, the rendering of the same rows alone.
func BenchmarkEncodeVersion(b *testing.B) {
	cs := benchChangeSet(b, 10_000)
	e := &encoder{topic: "t", table: "gold/events_5m", keyCols: goldKey}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, _, err := e.records(cs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(cs.Rows.Len())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkJSONRowsBaseline renders every row of the same version as JSON (pq.AppendJSONRow):
// the floor under any JSON encoding of the changes.
func BenchmarkJSONRowsBaseline(b *testing.B) {
	cs := benchChangeSet(b, 10_000)
	var buf []byte
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		for r := range cs.Rows.Len() {
			buf = pq.AppendJSONRow(buf[:0], cs.Rows, r)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(cs.Rows.Len())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkPublish publishes 20 versions of 2,500 upserts each to the test broker, a new sink
// each iteration (records/s end to end: change feed read, encoding, transactions).
func BenchmarkPublish(b *testing.B) {
	t := &testing.T{}
	conn := testConn(t)
	if t.Skipped() || t.Failed() {
		b.Skip("no broker")
	}
	g := newCDFGold(t, mem.New())
	for v := range 20 {
		ups := map[gkey]gval{}
		for i := range 2500 {
			ups[gkey{i, []string{"a", "b"}[v%2]}] = gval{count: int64(v)}
		}
		g.apply(ups, nil)
	}
	if t.Failed() {
		b.Fatal("table")
	}
	var records int64
	for i := 0; b.Loop(); i++ {
		spec := Spec{Name: uniqueName(fmt.Sprintf("bench%d", i)), Table: "gold/events_5m", Topic: uniqueName("bench"), Partitions: 3, Key: goldKey}
		rep, err := Publish(context.Background(), TableFeed(g.tbl), conn, spec, Options{})
		if err != nil {
			b.Fatal(err)
		}
		records += rep.Records
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
}
