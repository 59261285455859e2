package silver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

var lookupSchema = &txlog.StructType{Fields: []txlog.StructField{
	{Name: "id", Type: txlog.PrimitiveType{Name: txlog.TypeString}},
	{Name: "event_time", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}},
	{Name: "v", Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: true},
}}

// lookupRows builds the rows of one micro-batch from read batches of (id, time) pairs.
func lookupRows(t *testing.T, reads [][]lookupRow) *Rows {
	t.Helper()
	var bs []*pq.Batch
	r := &Rows{}
	n := 0
	for _, rs := range reads {
		n += len(rs)
	}
	for _, rs := range reads {
		b, err := pq.NewBatch(lookupSchema)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range rs {
			b.Columns[0].AppendString(x.id)
			b.Columns[1].AppendInt64(x.t)
			b.Columns[2].AppendInt64(x.t * 3)
		}
		bs = append(bs, b)
	}
	r.Reset(bs, n)
	for bi, rs := range reads {
		for i, x := range rs {
			r.EventTime = append(r.EventTime, x.t)
			r.Batch = append(r.Batch, int32(bi))
			r.Row = append(r.Row, int32(i))
		}
	}
	r.EncodeKeys([]int{0})
	return r
}

type lookupRow struct {
	id string
	t  int64
}

// TestLookupReadsOnlyRowGroupsOfItsTimes writes silver through Writer as a stream does (each
// micro-batch two read batches in arrival order, 3% of their rows hours late), then looks up
// resends of old rows from all over the run among new keys of an old burst. Every resend is
// found and no new key is (the oracle is a map of what was written), and the look-up reads
// few of silver's pages: without the writer's event-time order every row group and page holds
// late rows that widen its range to hours, and without the scan's pruning by row group and
// by page every page of a candidate file is read.
func TestLookupReadsOnlyPagesOfItsTimes(t *testing.T) {
	ctx := context.Background()
	const sec = int64(1_000_000)
	b := mem.New()
	silver := table.Open(b, table.Options{Write: WriteOptions([]string{"id"}, pq.WriteOptions{})})
	rejects := table.Open(mem.New(), table.Options{})
	if _, err := silver.Create(ctx, lookupSchema, nil, nil); err != nil {
		t.Fatal(err)
	}
	noRejects, err := pq.NewBatch(lookupSchema)
	if err != nil {
		t.Fatal(err)
	}
	w := &Writer{Silver: silver, Rejects: rejects}
	rng := rand.New(rand.NewPCG(7, 8))
	written := map[string]int64{}
	var all []lookupRow
	const batches, perRead = 8, 10_000
	clock := int64(0)
	for n := range batches {
		reads := make([][]lookupRow, 2)
		for r := range reads {
			for range perRead {
				clock += sec / 10
				x := lookupRow{id: fmt.Sprintf("e%07d", len(written)), t: clock - rng.Int64N(5*sec)}
				if rng.IntN(100) < 3 && clock > 3600*sec {
					x.t = clock - 3600*sec - rng.Int64N(3600*sec)
				}
				written[x.id] = x.t
				all = append(all, x)
				reads[r] = append(reads[r], x)
			}
		}
		rows := lookupRows(t, reads)
		fresh := make([]int32, rows.Len())
		for i := range fresh {
			fresh[i] = int32(i)
		}
		if _, err := w.Write(ctx, rows, Judged{Fresh: fresh}, noRejects, &table.AppTxn{AppID: "q", Version: int64(n)}); err != nil {
			t.Fatal(err)
		}
	}
	// The look-up: 4 resends from anywhere, and a burst of 300 new keys from one old minute.
	var probe []lookupRow
	for range 4 {
		probe = append(probe, all[rng.IntN(len(all))])
	}
	burst := all[len(all)/3].t
	for k := range 300 {
		probe = append(probe, lookupRow{id: fmt.Sprintf("new%04d", k), t: burst + rng.Int64N(60*sec)})
	}
	rows := lookupRows(t, [][]lookupRow{probe})
	idx := make([]int32, rows.Len())
	for i := range idx {
		idx[i] = int32(i)
	}
	l := &Lookup{Table: silver, Schema: lookupSchema, KeyCols: []int{0}, EventTime: 1, AppID: "q"}
	seen, err := l.Seen(ctx, batches, rows, idx)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range probe {
		_, want := written[x.id]
		if seen[string(rows.Keys[i])] != want {
			t.Fatalf("key %s (time %d): seen %v, want %v", x.id, x.t, seen[string(rows.Keys[i])], want)
		}
	}
	groupsRead, groupsSkipped := l.GroupCounts()
	read, skipped := l.PageCounts()
	// An event_time page holds about silverPageBytes/8 rows.
	total := batches * 2 * perRead / (silverPageBytes / 8)
	t.Logf("row groups read %d, left out %d; pages read %d, left out %d (silver has about %d)", groupsRead, groupsSkipped, read, skipped, total)
	if read == 0 || read > int64(total)/4 {
		t.Fatalf("the look-up read %d pages and left out %d; want at least one and at most a quarter of about %d", read, skipped, total)
	}
}

// TestLookupReadsAFileAroundItsOwnKeys looks up one resend among new keys whose times spread
// over the same stretch of silver: the file that holds the resend is read only around the
// resend's time (the keys its bloom filters may hold), not around every wanted key's, so a
// page or two of it, where reading the pages of every key's time read most of the file.
func TestLookupReadsAFileAroundItsOwnKeys(t *testing.T) {
	ctx := context.Background()
	const sec = int64(1_000_000)
	silver := table.Open(mem.New(), table.Options{Write: WriteOptions([]string{"id"}, pq.WriteOptions{})})
	if _, err := silver.Create(ctx, lookupSchema, nil, nil); err != nil {
		t.Fatal(err)
	}
	noRejects, err := pq.NewBatch(lookupSchema)
	if err != nil {
		t.Fatal(err)
	}
	w := &Writer{Silver: silver, Rejects: table.Open(mem.New(), table.Options{})}
	var written []lookupRow
	for i := range 60_000 {
		written = append(written, lookupRow{id: fmt.Sprintf("e%07d", i), t: int64(i) * sec / 10})
	}
	rows := lookupRows(t, [][]lookupRow{written})
	fresh := make([]int32, rows.Len())
	for i := range fresh {
		fresh[i] = int32(i)
	}
	if _, err := w.Write(ctx, rows, Judged{Fresh: fresh}, noRejects, &table.AppTxn{AppID: "q", Version: 0}); err != nil {
		t.Fatal(err)
	}
	resend := written[30_000]
	probe := []lookupRow{resend}
	for k := range 200 {
		probe = append(probe, lookupRow{id: fmt.Sprintf("new%04d", k), t: int64(k) * 30 * sec})
	}
	rows = lookupRows(t, [][]lookupRow{probe})
	idx := make([]int32, rows.Len())
	for i := range idx {
		idx[i] = int32(i)
	}
	l := &Lookup{Table: silver, Schema: lookupSchema, KeyCols: []int{0}, EventTime: 1, AppID: "q"}
	seen, err := l.Seen(ctx, 1, rows, idx)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !seen[string(rows.Keys[0])] {
		t.Fatalf("seen %d keys (the resend: %v), want the resend only", len(seen), seen[string(rows.Keys[0])])
	}
	read, skipped := l.PageCounts()
	t.Logf("pages read %d, left out %d", read, skipped)
	if read == 0 || read > 2 {
		t.Fatalf("the look-up read %d event_time pages (left out %d); want one or two, around the resend", read, skipped)
	}
}

// TestEventTimeOrder checks the radix sort against a stable comparison sort on the same
// 1.024 ms ticks, across a span that needs several radix digits.
func TestEventTimeOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	var o timeOrder
	for _, n := range []int{0, 1, 2, 1000, 70_000} {
		evt := make([]int64, n+5)
		for i := range evt {
			evt[i] = 1_700_000_000_000_000 + int64(i)*700 + rng.Int64N(3_000_000)
			if rng.IntN(50) == 0 {
				evt[i] -= rng.Int64N(40 * 86_400_000_000) // days late
			}
		}
		var sel []int32
		for i := range evt {
			if rng.IntN(10) > 0 && len(sel) < n {
				sel = append(sel, int32(i))
			}
		}
		got := slices.Clone(o.eventTimeOrder(evt, sel))
		want := slices.Clone(sel)
		if len(sel) > 0 {
			lo := evt[sel[0]]
			for _, i := range sel {
				lo = min(lo, evt[i])
			}
			slices.SortStableFunc(want, func(a, b int32) int {
				return int((evt[a]-lo)>>10 - (evt[b]-lo)>>10)
			})
		}
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: the order differs from a stable sort by 1.024 ms ticks", n)
		}
	}
}
