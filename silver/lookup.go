package silver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrLookup reports a silver table whose log cannot tell which files a batch wrote, so that
// a look-up cannot leave them out.
var ErrLookup = errors.New("silver: dedup look-up")

// Lookup finds which keys of rows too late for the dedup state silver already holds: such a
// row is a resend of a row silver took long ago, or a first arrival.
type Lookup struct {
	Table     *table.Table      // silver
	Schema    *txlog.StructType // silver's schema
	KeyCols   []int             // the dedup key's columns in Schema
	EventTime int               // the event-time column in Schema
	AppID     string            // the txn appId of the stream's silver writes (its query id)
	Path      string            // silver's table path, for errors

	tails  *table.FileTails   // the ends of the files the last look-up opened
	groups *table.GroupRanges // the last look-up's row-group pruning, for its counts
}

// GroupCounts reports the row groups of silver's files the last look-up read and left out by
// their event-time statistics.
func (l *Lookup) GroupCounts() (read, skipped int64) {
	if l.groups == nil {
		return 0, 0
	}
	return l.groups.Counts()
}

// PageCounts reports the event_time pages, inside the row groups the last look-up read, that
// it read and left out by the page index.
func (l *Lookup) PageCounts() (read, skipped int64) {
	if l.groups == nil {
		return 0, 0
	}
	return l.groups.PageCounts()
}

// lookupTailBudget bounds the file ends a Lookup keeps between batches: a silver file of 64k-row
// groups keeps about 260 KB (the 64 KiB end with its footer and page index, and the 196 KB
// bloom filter of its first row group), and a batch of a 10M-event, 1k-key stream opens up to
// 146 files by its end. 16 MiB held about 60: the others' ends and filters were read again
// every batch (836 and 836 GETs of that stream on MinIO, a fifth of its requests); 32 MiB
// holds them all there, for no change in peak RSS at 10M/100k on files (session 21).
const lookupTailBudget = 32 << 20

// Seen returns which of the keys of rows idx (encoded, rows.Keys) silver already holds, reading
// only files whose event-time range can hold them and leaving out what batch n itself wrote
// before a crash (so that a re-run decides as the first run did).
func (l *Lookup) Seen(ctx context.Context, n int64, rows *Rows, idx []int32) (map[string]bool, error) {
	seen := map[string]bool{}
	snap, err := l.Table.Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return seen, nil
	}
	if err != nil {
		return nil, fmt.Errorf("silver: %w", err)
	}
	w, err := l.wanted(rows, idx)
	if err != nil {
		return nil, err
	}
	skip, err := l.ownFiles(ctx, snap, n)
	if err != nil {
		return nil, err
	}
	evName := l.Schema.Fields[l.EventTime].Name
	var cols []string
	for _, c := range l.KeyCols {
		cols = append(cols, l.Schema.Fields[c].Name)
	}
	// The event times prune files by their stats, and row groups inside them by theirs; the
	// rows are matched on the key alone, so no row filter runs.
	clusters := clusterRows(rows.EventTime, idx, time.Minute, maxTimeClusters)
	pruner, err := l.Table.FileScan(snap, nil, timeClusters(evName, clusters))
	if err != nil {
		return nil, fmt.Errorf("silver: scan: %w", err)
	}
	fs, err := l.Table.FileScan(snap, cols, nil)
	if err != nil {
		return nil, fmt.Errorf("silver: scan: %w", err)
	}
	// Row groups are pruned by finer ranges than files: a range check a row group is a
	// binary search, where the file predicate is evaluated range by range.
	fs.Groups = &table.GroupRanges{Column: evName, Ranges: clusterRows(rows.EventTime, idx, time.Second, maxGroupRanges)}
	l.groups = fs.Groups
	var files []*txlog.Add
	opened := map[string]bool{}
	for _, a := range pruner.Files(snap.Files()) {
		if !skip[a.Path] {
			files = append(files, a)
			opened[a.Path] = true
		}
	}
	// The files a batch opens are mostly the ones the last opened (late rows come in bursts
	// of recent event times): their ends are kept, the others' dropped.
	if l.tails == nil {
		l.tails = table.NewFileTails(lookupTailBudget)
	}
	l.tails.Keep(func(path string) bool { return opened[path] })
	fs.Tails = l.tails
	// Files are read on every core, each worker collecting the keys it found.
	workers := min(len(files), runtime.GOMAXPROCS(0))
	found := make([]map[string]bool, workers)
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for k := range workers {
		found[k] = map[string]bool{}
		wg.Go(func() {
			var rb pq.ReadBuffer // the worker is done with each batch before the next
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) || ctx.Err() != nil {
					return
				}
				if errs[k] = l.match(ctx, fs, files[i], w, &rb, found[k]); errs[k] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// Without the file the look-up cannot tell a resend from a new row: the way out
		// is the file, or silver built anew from bronze.
		return nil, table.ExplainMissing(fmt.Errorf("silver: dedup look-up: %w", err), "silver "+l.Path+": dedup look-up",
			"restore it from the bucket's versioning or a backup (docs/recovery.md, \"A data file is gone\")")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, f := range found {
		maps.Copy(seen, f)
	}
	return seen, nil
}

// wantedKeys are the distinct keys a look-up asks for, with their rows' event times: encoded,
// and as a batch of the key columns and the event time (row j is keys[j]) for the bloom
// filters silver's files carry on the keys and the event_time statistics of their row groups.
// A resend carries the event time of the row it resends, so a key is looked for only in the
// row groups whose event times can hold its own (FileScan.MayContain with Groups).
type wantedKeys struct {
	batch *pq.Batch
	keys  [][]byte
	times []int64 // keys[j]'s event time (µs)
}

func (l *Lookup) wanted(rows *Rows, idx []int32) (*wantedKeys, error) {
	cols := l.KeyCols
	if !slices.Contains(cols, l.EventTime) {
		cols = append(slices.Clone(cols), l.EventTime)
	}
	keySchema := &txlog.StructType{}
	for _, c := range cols {
		keySchema.Fields = append(keySchema.Fields, l.Schema.Fields[c])
	}
	b, err := pq.NewBatch(keySchema)
	if err != nil {
		return nil, err
	}
	w := &wantedKeys{batch: b}
	view := &pq.Batch{Schema: keySchema, Columns: make([]*pq.Column, len(cols))}
	want := map[string]bool{}
	var id []byte
	for _, i := range idx {
		id = binary.LittleEndian.AppendUint64(append(id[:0], rows.Keys[i]...), uint64(rows.EventTime[i]))
		if want[string(id)] {
			continue
		}
		want[string(id)] = true
		w.keys = append(w.keys, rows.Keys[i])
		w.times = append(w.times, rows.EventTime[i])
		for k, c := range cols {
			view.Columns[k] = rows.Batches[rows.Batch[i]].Columns[c]
		}
		b.AppendRow(view, int(rows.Row[i]))
	}
	return w, nil
}

// match adds to found the wanted keys file f holds.
func (l *Lookup) match(ctx context.Context, fs *table.FileScan, f *txlog.Add, w *wantedKeys, rb *pq.ReadBuffer, found map[string]bool) error {
	may, err := fs.MayContain(ctx, f, w.batch)
	if err != nil {
		return err
	}
	if !slices.Contains(may, true) {
		return nil // the file's bloom filters rule out every wanted key
	}
	// Rows are matched against the keys the file may hold only: a handful of true resends
	// among thousands of wanted keys, when the file has bloom filters.
	var key []byte
	set := newKeySet(countTrue(may))
	var times []int64
	for j, m := range may {
		if m {
			set.add(w.keys[j], firstHash(w.batch.Columns[0], j, &key))
			times = append(times, w.times[j])
		}
	}
	// The file is read only around the times of the keys its bloom filters may hold, not of
	// every wanted key: the pages its other keys' times meet cannot hold a match.
	scan := *fs
	if fs.Groups != nil {
		scan.Groups = fs.Groups.Narrowed(clusterTimes(times, int64(time.Second/time.Microsecond), maxGroupRanges))
	}
	for b, err := range scan.ReadWith(ctx, []*txlog.Add{f}, rb) {
		if err != nil {
			return err
		}
		first := b.Columns[0]
		for row := range b.Len() {
			if !set.mayHave(firstHash(first, row, &key)) {
				continue
			}
			key = key[:0]
			for c := range l.KeyCols {
				key = pq.AppendKeyPart(key, b.Columns[c], row)
			}
			if set.keys[string(key)] {
				found[string(key)] = true
			}
		}
	}
	return nil
}

// keySet is a set of encoded keys with a bitset of the hashes of their first columns' values
// (firstHash): a few KiB that stay in cache and turn away almost every absent key before it
// is even encoded, let alone looked up in the map. A silver look-up matches millions of rows
// against sets that hold few of them.
type keySet struct {
	bits []uint64
	mask uint64
	keys map[string]bool
}

// newKeySet returns an empty set sized for n keys: a bitset of at least 16 bits a key (4096 at
// the least), so that about 1 absent key in 100 gets past it.
func newKeySet(n int) *keySet {
	bits := uint64(1) << 12
	for bits < uint64(n)*16 {
		bits <<= 1
	}
	return &keySet{bits: make([]uint64, bits/64), mask: bits - 1, keys: make(map[string]bool, n)}
}

// add puts an encoded key, whose first column's value has hash h, into the set.
func (s *keySet) add(key []byte, h uint64) {
	s.keys[string(key)] = true
	for _, b := range [2]uint64{h & s.mask, h >> 32 & s.mask} {
		s.bits[b/64] |= 1 << (b % 64)
	}
}

// mayHave reports whether a key whose first column's value has hash h may be in the set.
func (s *keySet) mayHave(h uint64) bool {
	for _, b := range [2]uint64{h & s.mask, h >> 32 & s.mask} {
		if s.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// firstHash hashes row i of a key's first column: its bytes or its number as they are, others
// (and nulls) as encoded in scratch. Equal values hash equal, which is all the bitset needs.
func firstHash(c *pq.Column, i int, scratch *[]byte) uint64 {
	if !c.IsNull(i) {
		switch c.Kind {
		case pq.KindBytes:
			return quickHash(c.BytesAt(i))
		case pq.KindInt64:
			return mix64(uint64(c.Int64[i]))
		}
	}
	*scratch = pq.AppendKeyPart((*scratch)[:0], c, i)
	return quickHash(*scratch)
}

// quickHash mixes a value's first and last eight bytes and its length: a few cycles, where a
// full hash of every row's key cost more than the map it guards. Values that differ only in
// their middle bytes get past the bitset to the map, which decides.
func quickHash(k []byte) uint64 {
	var head, tail uint64
	if len(k) >= 8 {
		head, tail = binary.LittleEndian.Uint64(k), binary.LittleEndian.Uint64(k[len(k)-8:])
	} else {
		var b [8]byte
		copy(b[:], k)
		head = binary.LittleEndian.Uint64(b[:])
	}
	return mix64(head*0x9e3779b97f4a7c15 ^ tail ^ uint64(len(k)))
}

func mix64(x uint64) uint64 {
	x *= 0xff51afd7ed558ccd
	return x ^ x>>29
}

// maxTimeClusters bounds the ranges of timeClusters' predicate, maxGroupRanges those that
// prune row groups.
const (
	maxTimeClusters = 64
	maxGroupRanges  = 4096
)

// clusterRows is the event-time ranges (µs, clusterTimes from minGap, at most maxRanges) of
// the rows idx.
func clusterRows(evt []int64, idx []int32, minGap time.Duration, maxRanges int) [][2]int64 {
	times := make([]int64, len(idx))
	for k, i := range idx {
		times[k] = evt[i]
	}
	return clusterTimes(times, int64(minGap/time.Microsecond), maxRanges)
}

// timeClusters is a predicate on the event-time column that holds the times of ranges.
func timeClusters(col string, ranges [][2]int64) sqlexpr.Expr {
	var or []sqlexpr.Expr
	for _, r := range ranges {
		or = append(or, sqlexpr.And(sqlexpr.Ge(col, time.UnixMicro(r[0]).UTC()), sqlexpr.Le(col, time.UnixMicro(r[1]).UTC())))
	}
	return sqlexpr.Or(or...)
}

// clusterTimes sorts times (µs, at least one) and cuts them into ranges wherever two
// neighbours are more than a gap apart, the gap doubling from minGap until at most maxRanges
// ranges remain. Late rows come in bursts (a device an hour late) and stragglers (a resend
// days later): one range over all of them would span days and match every file between.
func clusterTimes(times []int64, minGap int64, maxRanges int) [][2]int64 {
	slices.Sort(times)
	for gap := max(minGap, 1); ; gap *= 2 {
		var ranges [][2]int64
		lo := times[0]
		for k := 1; k <= len(times); k++ {
			if k == len(times) || times[k]-times[k-1] > gap {
				ranges = append(ranges, [2]int64{lo, times[k-1]})
				if k < len(times) {
					lo = times[k]
				}
			}
		}
		if len(ranges) <= maxRanges {
			return ranges
		}
	}
}

// ownFiles lists the files silver got from batch n itself, when a previous attempt of the
// batch committed there before a crash.
func (l *Lookup) ownFiles(ctx context.Context, snap *txlog.Snapshot, n int64) (map[string]bool, error) {
	if v, ok := snap.TxnVersion(l.AppID); !ok || v < n {
		return nil, nil
	}
	b := l.Table.Log().Bucket()
	for v := snap.Version(); v >= 0 && v > snap.Version()-1000; v-- {
		actions, err := txlog.ReadActions(ctx, b, v)
		if err != nil {
			return nil, fmt.Errorf("silver: commit %d: %w", v, err)
		}
		mine := false
		paths := map[string]bool{}
		for _, a := range actions {
			if a.Txn != nil && a.Txn.AppID == l.AppID && a.Txn.Version == n {
				mine = true
			}
			if a.Add != nil {
				paths[a.Add.Path] = true
			}
		}
		if mine {
			return paths, nil
		}
	}
	return nil, fmt.Errorf("%w: silver holds txn %s version >= %d but its commit is not among the last 1000", ErrLookup, l.AppID, n)
}
