package late

import (
	"fmt"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// groupIndexCase is gold as merge-late meets it at 100k keys: 144 five-minute windows of
// 50k keys each, rows window-major and key-sorted as the stream writes them, and late groups
// in 2% of each window's keys (about 144k groups).
func groupIndexCase(b *testing.B) (*pq.Batch, []*group) {
	const windows, keys, every = 144, 50_000, 50
	schema := &txlog.StructType{Fields: []txlog.StructField{{Name: "device_id", Type: txlog.PrimitiveType{Name: txlog.TypeString}}}}
	gb, err := pq.NewBatch(schema)
	if err != nil {
		b.Fatal(err)
	}
	var groups []*group
	for w := range int64(windows) {
		win := gold.Window{Start: w * 300e6, End: (w + 1) * 300e6}
		for k := range keys {
			gb.Columns[0].AppendString(fmt.Sprintf("dev-%05d", k))
			if k%every == int(w)%every {
				i := gb.Len() - 1
				groups = append(groups, &group{key: string(groupKey(nil, win.Start, win.End, gb.Columns, i)), win: win})
			}
		}
	}
	return gb, groups
}

// BenchmarkGroupIndex finds each gold row's late group (7.2M rows, about 144k groups): in one
// map of every group, as merge-late did, and window first (groupIndex).
func BenchmarkGroupIndex(b *testing.B) {
	gb, groups := groupIndexCase(b)
	const keys = 50_000
	start := func(i int) (int64, int64) { w := int64(i / keys); return w * 300e6, (w + 1) * 300e6 }
	b.Run("one-map", func(b *testing.B) {
		b.ReportAllocs()
		index := make(map[string]*group, len(groups))
		for _, g := range groups {
			index[g.key] = g
		}
		var key []byte
		for b.Loop() {
			found := 0
			for i := range gb.Len() {
				s, e := start(i)
				key = groupKey(key[:0], s, e, gb.Columns, i)
				if index[string(key)] != nil {
					found++
				}
			}
			if found != len(groups) {
				b.Fatalf("found %d of %d groups", found, len(groups))
			}
		}
	})
	b.Run("by-window", func(b *testing.B) {
		b.ReportAllocs()
		index := newGroupIndex(groups)
		var key []byte
		for b.Loop() {
			found := 0
			for i := range gb.Len() {
				s, e := start(i)
				if index.find(&key, s, e, gb.Columns, i) != nil {
					found++
				}
			}
			if found != len(groups) {
				b.Fatalf("found %d of %d groups", found, len(groups))
			}
		}
	})
}

// TestGroupIndexFinds: every group is found by its window and keys, in any order of windows
// (a window met again after another), and a row of no group finds none.
func TestGroupIndexFinds(t *testing.T) {
	schema := &txlog.StructType{Fields: []txlog.StructField{{Name: "k", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true}}}
	kb, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	kb.Columns[0].AppendNull()
	for k := range 2 * listMax {
		kb.Columns[0].AppendString(fmt.Sprint("k", k))
	}
	// Windows 0 and 2 hold more groups than a list keeps, 1 and 3 fewer; window 3's groups
	// come in two runs (groups out of window order).
	wins := []gold.Window{{Start: 0, End: 10}, {Start: 5, End: 15}, {Start: 10, End: 20}, {Start: 15, End: 25}}
	var groups []*group
	want := map[[3]int64]*group{}
	for w, win := range wins {
		for i := range kb.Len() {
			if w%2 == 0 && i%2 == 0 || w == 1 && i < 3 || w == 3 && (i == 1 || i == 5) {
				g := &group{key: string(groupKey(nil, win.Start, win.End, kb.Columns, i)), win: win}
				groups = append(groups, g)
				want[[3]int64{win.Start, win.End, int64(i)}] = g
			}
		}
	}
	groups = slices.Concat(groups[len(groups)-1:], groups[:len(groups)-1]) // window 3 split
	x := newGroupIndex(groups)
	var key []byte
	for _, w := range []int{0, 1, 0, 2, 3, 2, 1, 0, 3} {
		for i := range kb.Len() {
			win := wins[w]
			if got := x.find(&key, win.Start, win.End, kb.Columns, i); got != want[[3]int64{win.Start, win.End, int64(i)}] {
				t.Fatalf("window %v row %d: found %v", win, i, got)
			}
		}
	}
	if got := x.find(&key, 0, 15, kb.Columns, 0); got != nil {
		t.Fatalf("a window no group has: found %v", got)
	}
}
