package sqlexpr

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// sqlInList is "event_id IN ('evt-000000000000', ...)" with n items: the shape of an
// expectation generated from a list of known ids (issue 30: 20,000 items took 6 CPU s).
func sqlInList(n int) string {
	var sb strings.Builder
	sb.WriteString("event_id IN (")
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "'evt-%012d'", i)
	}
	sb.WriteString(")")
	return sb.String()
}

// sqlOrChain is "amount = 0 OR amount = 1 OR ..." with n comparisons: a left-deep tree.
func sqlOrChain(n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteString(" OR ")
		}
		fmt.Fprintf(&sb, "amount = %d", i)
	}
	return sb.String()
}

// sqlNested is n parentheses around one comparison.
func sqlNested(n int) string {
	return strings.Repeat("(", n) + "amount > 0" + strings.Repeat(")", n)
}

// BenchmarkParseSQL parses (and binds, as config load does) expressions of growing size;
// ns/op and cpu-ns/op beside each other, per shape and size.
func BenchmarkParseSQL(b *testing.B) {
	schema := pqtest.MustSchema(b, pqtest.BenchSchema)
	cases := []struct {
		name string
		text string
	}{
		{"in=20000", sqlInList(20_000)},
		{"in=40000", sqlInList(40_000)},
		{"in=50000", sqlInList(50_000)},
		{"in=100000", sqlInList(100_000)},
		{"or=10000", sqlOrChain(10_000)},
		{"or=20000", sqlOrChain(20_000)},
		{"nested=500", sqlNested(500)},
		{"nested=1000", sqlNested(1000)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			start := pqtest.CPUClock()
			for b.Loop() {
				parseAndBind(b, c.text, schema)
			}
			b.ReportMetric(float64(pqtest.CPUClock()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

func parseAndBind(b *testing.B, text string, schema *txlog.StructType) {
	e, err := ParseSQL(text)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := CompileSQL(e, schema); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkParseSQLGrowth parses IN lists of 20k, 40k, 50k and 100k items in each iteration
// and reports how time grows with the size: a linear parser gives ratios near 2 (a quadratic
// one near 4). Wall and CPU ratios are reported side by side; nothing is asserted.
func BenchmarkParseSQLGrowth(b *testing.B) {
	sizes := []int{20_000, 40_000, 50_000, 100_000}
	texts := make([]string, len(sizes))
	for i, n := range sizes {
		texts[i] = sqlInList(n)
	}
	wall := make([]time.Duration, len(sizes))
	cpu := make([]time.Duration, len(sizes))
	for b.Loop() {
		for i, text := range texts {
			w0, c0 := time.Now(), pqtest.CPUClock()
			if _, err := ParseSQL(text); err != nil {
				b.Fatal(err)
			}
			wall[i] += time.Since(w0)
			cpu[i] += pqtest.CPUClock() - c0
		}
	}
	ratio := func(d []time.Duration, hi, lo int) float64 { return float64(d[hi]) / float64(d[lo]) }
	b.ReportMetric(ratio(wall, 1, 0), "wall-40k/20k")
	b.ReportMetric(ratio(cpu, 1, 0), "cpu-40k/20k")
	b.ReportMetric(ratio(wall, 3, 2), "wall-100k/50k")
	b.ReportMetric(ratio(cpu, 3, 2), "cpu-100k/50k")
	b.ReportMetric(cpu[0].Seconds()/float64(b.N), "cpu-s-20k/op")
	b.ReportMetric(cpu[3].Seconds()/float64(b.N), "cpu-s-100k/op")
}

// BenchmarkSQLInListEval evaluates an IN list of n ids over a batch of 8,192 events, half of
// which are in the list: the cost per row should not grow with the list (a hash set).
func BenchmarkSQLInListEval(b *testing.B) {
	const rows = 8192
	batch := pqtest.BenchBatch(b, rows)
	for _, n := range []int{4, 100, 20_000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString("event_id IN (")
			for i := range n {
				if i > 0 {
					sb.WriteString(", ")
				}
				// benchBatch's ids are evt-%012d; every other item is one of them.
				fmt.Fprintf(&sb, "'evt-%012d'", i*rows/n*2%(2*rows))
			}
			sb.WriteString(")")
			e, err := ParseSQL(sb.String())
			if err != nil {
				b.Fatal(err)
			}
			p, err := CompileSQL(e, batch.Schema)
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			start := pqtest.CPUClock()
			for b.Loop() {
				p.Eval(batch, now)
			}
			b.ReportMetric(float64(pqtest.CPUClock()-start)/float64(b.N*rows), "cpu-ns/row")
		})
	}
}
