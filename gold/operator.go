package gold

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/medallion-lake/medallion/pq"
)

// ErrUnsupportedOperation is returned by Validate for the combinations Spark rejects; the
// message after the prefix is Spark's own text.
var ErrUnsupportedOperation = errors.New("gold: unsupported operation")

// Mode is the streaming output mode.
type Mode uint8

// The output modes (spec §4.1).
const (
	Append Mode = iota + 1
	Update
	Complete
)

func (m Mode) String() string {
	switch m {
	case Append:
		return "Append"
	case Update:
		return "Update"
	case Complete:
		return "Complete"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// AggConfig describes one gold aggregation: groupBy(window, keys).agg(aggs) in a mode.
type AggConfig struct {
	// Window is the tumbling/sliding window; ignored when Session is set.
	Window WindowSpec
	// Session selects session windows instead: a static gap, or Gap 0 with Input.SessionGap
	// set on every batch (dynamic gap).
	Session *SessionSpec
	Mode    Mode
	Aggs    []AggSpec
	// NumKeys is the number of group-by columns besides the window.
	NumKeys int
	// NoWatermark says the query has no watermark on the event-time column (Append is then
	// rejected, as in Spark).
	NoWatermark bool
}

// Validate checks the combination with Spark's UnsupportedOperationChecker rules (spec §4.2)
// and every aggregate's parameters.
func (c *AggConfig) Validate() error {
	if c.Mode < Append || c.Mode > Complete {
		return fmt.Errorf("gold: unknown output mode %d", c.Mode)
	}
	if c.Session == nil && c.Window.n == 0 {
		return fmt.Errorf("%w: window not set (build it with NewWindowSpec)", ErrInvalidWindow)
	}
	if c.Session != nil && c.Session.Gap < 0 {
		// Gap 0 means every batch carries a per-row gap column (Input.SessionGap).
		return valueOutOfRange("gap_duration", c.Session.Gap)
	}
	if len(c.Aggs) == 0 {
		return errors.New("gold: an aggregation needs at least one aggregate")
	}
	for i := range c.Aggs {
		if err := c.Aggs[i].validate(); err != nil {
			return err
		}
	}
	switch {
	case c.Mode == Append && c.NoWatermark:
		return fmt.Errorf("%w: Append output mode not supported when there are streaming aggregations on streaming DataFrames/DataSets without watermark", ErrUnsupportedOperation)
	case c.Session != nil && c.Mode == Update:
		return fmt.Errorf("%w: Update output mode not supported for session window on streaming DataFrames/DataSets", ErrUnsupportedOperation)
	case c.Session != nil && c.NumKeys == 0:
		//lint:ignore ST1005 Spark's error text, verbatim with its final period (spec/streaming-semantics.md)
		return fmt.Errorf("%w: Global aggregation with session window in streaming query is not supported.", ErrUnsupportedOperation)
	}
	return nil
}

// ShouldRunNoDataBatch is Spark's predicate for a stateful aggregation: run another batch even
// without new data when the new watermark would evict something (Append/Update only).
func (c *AggConfig) ShouldRunNoDataBatch(newWatermarkMs, evictionWatermarkMs int64) bool {
	return (c.Mode == Append || c.Mode == Update) && newWatermarkMs > evictionWatermarkMs
}

// OutRow is one emitted gold row.
type OutRow struct {
	Window Window
	// Key is the encoded group key (DecodeKey splits it).
	Key string
	// Aggs are the group's states; for groups still in state (Update, Complete) sketches are
	// cloned, so they stay valid after the next batch.
	Aggs []AggValue
}

// Result is what one batch produced. It is owned by the Aggregation and valid until the next
// ProcessBatch.
type Result struct {
	// Rows are emitted per the output mode, ordered by window start, end, then encoded key
	// bytes (deterministic, not the keys' SQL order); empty when the batch's Input.Out took
	// them as gold columns.
	Rows []OutRow
	// LateRows are the input rows late for at least one of their windows (each once, ascending);
	// the runner quarantines them with LateWatermarkMs, the watermark that judged them.
	LateRows        []int32
	LateWatermarkMs int64
	// NumCorrectionRows is how many of LateRows are session corrections: on time by Spark's
	// rule, but touching a session already emitted or a row already quarantined (see
	// session.go). Spark counts them nowhere; they are not in NumRowsDroppedByWatermark.
	NumCorrectionRows int64
	// NumRowsDroppedByWatermark is Spark's counter: distinct late groups (key + window).
	NumRowsDroppedByWatermark int64
	// NumRowsTotal, NumRowsUpdated, NumRowsRemoved are the state operator metrics.
	NumRowsTotal, NumRowsUpdated, NumRowsRemoved int64
	// NumRowsOutput is the number of rows emitted (into Rows, or into Input.Out).
	NumRowsOutput int64
}

type lateKey struct {
	start int64
	key   string
}

// group is one (window, key) group in state: 16 bytes. A time window's end is its start plus
// the size; a session's end is kept beside (Aggregation.ends).
type group struct {
	start   int64
	key     int32  // -1: a free slot
	touched uint32 // the batch that last updated it
}

func (g *group) live() bool { return g.key >= 0 }

type sessItem struct {
	key  int32
	w    Window
	row  int32
	slot int32 // -1 for an input row, else a stored session
}

// Aggregation is the stateful operator of one gold aggregation. State is keyed by
// (window, group key) and holds only windows not yet evicted. It is not safe for concurrent use.
type Aggregation struct {
	cfg AggConfig

	// The group keys (keytab.go): the aggregation's own table, or one shared with the
	// query's other aggregations over the same columns (share: keyshare.go). keyRefs counts
	// this aggregation's references to each key id; with a shared table, keyDropped lists
	// the ids whose count fell to 0 in this batch, for the table to free after it.
	*keyTable
	keyRefs    []int32
	share      *KeyShare
	keyDropped []int32

	// gtab finds a time window's group by key and start (grouptab.go).
	gtab      groupIndex
	sessions  map[int32][]int32 // session windows: key -> slots ordered by start
	groups    []group
	ends      []int64 // session windows: each slot's window end
	freeSlots []int32
	live      int64
	// minEnd is a lower bound of the live groups' window ends (sessions only grow).
	minEnd int64
	accs   []*acc
	batch  uint32

	// settled: for session windows in Append mode with a static gap, each key's extents the
	// stream no longer holds, by key id (session.go); settledKeys the ids that have some,
	// settledMinEnd a lower bound of their ends, and pendingSettle the windows of this batch's
	// late and correction rows, settled once the batch's rows are routed.
	settled       [][]Window
	settledKeys   []int32
	settledMinEnd int64
	pendingSettle []sessItem

	winBuf   []Window
	pairSlot []int32
	pairRow  []int32
	// deferred are the rows of a batch that evicts with windows its watermark leaves open:
	// those windows are placed after the closed groups are emitted and freed (evictFirst).
	deferred  []deferredRow
	items     []sessItem
	touched   []int32
	evictedAt int64 // the eviction watermark (µs) of the last batch, for AppendDelta
	lateSeen  map[lateKey]struct{}
	res       Result
	evictList []int32
	evictBits []uint64 // freeEvicted's buffer
	touchSink uint32   // what placePairs' read-ahead loads summed, kept so they are not dropped
	deltaSink uint32   // likewise for loadGroupsAhead (a state's encoding, which may run beside the next aggregation's)
	// Ordering the emitted groups: emitSlots are they, keyRank a key's place among the
	// batch's emitted keys (by bytes), keyIDsBuf each such key once, rowOrder the sort keys.
	emitSlots    []int32
	keyRank      []int32
	keyIDsBuf    []int32
	rowOrder     []rowSortKey
	aggBuf       []AggValue
	scratch      []byte
	keyPrefixes  []keyPrefix // sortKeys' buffers
	keyPrefixTmp []keyPrefix
	// countingSort's buffers.
	sortStarts []int64
	sortTmp    []int32
	sortCount  []int32
	// orderRows' result and buffers: perm the emitted groups' output order, rowRank each
	// emitted group's key rank, rowBucket its window's bucket (emitorder.go).
	perm      []int32
	rowRank   []int32
	rowBucket []int32
	// Writing gold's columns in slot order (emitcols.go): the batch's emitted keys decoded
	// once each, in rank order, and the permutation's scratch.
	keyStage []*pq.Column
	permBuf  permBuffers
}

// NewAggregation validates cfg and returns an empty operator.
func NewAggregation(cfg AggConfig) (*Aggregation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Aggs = slices.Clone(cfg.Aggs)
	a := &Aggregation{
		cfg:      cfg,
		keyTable: newKeyTable(),
		gtab:     newGroupIndex(),
		sessions: map[int32][]int32{},
		lateSeen: map[lateKey]struct{}{},
		minEnd:   math.MaxInt64,

		settledMinEnd: math.MaxInt64,
	}
	for i := range a.cfg.Aggs {
		a.accs = append(a.accs, newAcc(&a.cfg.Aggs[i]))
	}
	return a, nil
}

// Config is the operator's configuration.
func (a *Aggregation) Config() AggConfig { return a.cfg }

// MemoryUsedBytes is the state's footprint for progress (memoryUsedBytes): the capacity of
// every slice, table and string the state holds (groups, accumulators, keys and their index,
// the per-key window lists, free lists) and what each sketch holds, as last measured. Buffers
// that live only for a batch (emitted rows, pairs) are not state and are not counted.
func (a *Aggregation) MemoryUsedBytes() int64 {
	n := int64(unsafe.Sizeof(*a)) +
		sliceBytes(a.groups) + a.keyBytes() + sliceBytes(a.keyRefs) + sliceBytes(a.freeSlots) + a.gtab.Bytes() + sliceBytes(a.ends)
	for _, ss := range a.sessions {
		// The map entry (key, slice header, control byte) and the slice it names.
		n += int64(unsafe.Sizeof(int32(0))+unsafe.Sizeof(ss)+1) + sliceBytes(ss)
	}
	n += sliceBytes(a.settled) + sliceBytes(a.settledKeys)
	for _, k := range a.settledKeys {
		n += sliceBytes(a.settled[k])
	}
	for _, ac := range a.accs {
		n += int64(unsafe.Sizeof(*ac)) + ac.cells.bytes() + ac.xs.bytes() + ac.ns.bytes() + sliceBytes(ac.hll) + sliceBytes(ac.dd) +
			sliceBytes(ac.sketchBytes) + ac.sketchTotal
	}
	return n
}

// sliceBytes is the memory a slice's backing array takes.
func sliceBytes[T any](s []T) int64 {
	var z T
	return int64(cap(s)) * int64(unsafe.Sizeof(z))
}

// NumGroups is the number of (window, key) groups in state.
func (a *Aggregation) NumGroups() int { return int(a.live) }

// window is slot s's window.
func (a *Aggregation) window(s int32) Window {
	if a.ends != nil {
		return Window{a.groups[s].start, a.ends[s]}
	}
	return Window{a.groups[s].start, a.groups[s].start + a.cfg.Window.Size}
}

func (a *Aggregation) newSlot(w Window, key int32) int32 {
	var s int32
	if n := len(a.freeSlots); n > 0 {
		s = a.freeSlots[n-1]
		a.freeSlots = a.freeSlots[:n-1]
		for _, ac := range a.accs {
			ac.clear(s)
		}
	} else {
		s = int32(len(a.groups))
		a.groups = append(a.groups, group{})
		if a.cfg.Session != nil {
			a.ends = append(a.ends, 0)
		}
		for _, ac := range a.accs {
			ac.grow(s)
		}
	}
	a.groups[s] = group{start: w.Start, key: key}
	if a.ends != nil {
		a.ends[s] = w.End
	}
	a.minEnd = min(a.minEnd, w.End)
	a.keyRefs[key]++
	a.live++
	return s
}

func (a *Aggregation) freeSlot(s int32) {
	if g := &a.groups[s]; a.cfg.Session == nil {
		a.gtab.Delete(groupHash(a.keyHash[g.key], g.start, a.cfg.Window.Slide), s)
	}
	a.releaseSlot(s)
}

// freeEvicted frees the groups of evictList. When they are at least half of the time windows'
// groups (a backlog's batch closes every group the one before opened), the group index is
// rebuilt from the groups that stay (hashtab.Retain: one pass over the index) instead of
// deleting each group from it (a probe, mostly a cache miss, and a shift each).
func (a *Aggregation) freeEvicted() {
	if a.cfg.Session != nil || 2*len(a.evictList) < a.gtab.Len() {
		for _, s := range a.evictList {
			a.freeSlot(s)
		}
		return
	}
	// The evicted slots as bits: the index's entries name slots in no order, and a bit set of
	// a few hundred KB answers for each of them where the groups (16 bytes each) would miss.
	gone := slices.Grow(a.evictBits[:0], (len(a.groups)+63)/64)[:(len(a.groups)+63)/64]
	clear(gone)
	for _, s := range a.evictList {
		a.releaseSlot(s)
		gone[s/64] |= 1 << (s % 64)
	}
	a.gtab.Retain(func(s int32) bool { return gone[s/64]&(1<<(s%64)) == 0 })
	a.evictBits = gone
}

// releaseSlot frees slot s but for its entry in the group index, which the caller removes.
func (a *Aggregation) releaseSlot(s int32) {
	g := &a.groups[s]
	a.releaseKey(g.key)
	g.key = -1
	for _, ac := range a.accs {
		ac.clear(s) // drop sketch pointers so evicted state is collectable
	}
	a.freeSlots = append(a.freeSlots, s)
	a.live--
}

func (in *Input) key(i int) []byte {
	if len(in.Keys.Offsets) == 0 {
		return nil
	}
	return in.Keys.Value(i)
}

// ProcessBatch runs one micro-batch: lateWM is the late-row watermark (the previous batch's,
// in ms) and evictWM the eviction watermark (this batch's). A (row, window) pair whose window
// ends at or before lateWM is not aggregated and its row is reported in Result.LateRows;
// Complete mode neither drops nor evicts. An error after the input checks may leave state
// half-updated: the caller then discards the operator and restores the last snapshot, exactly
// as after a crash.
func (a *Aggregation) ProcessBatch(in *Input, lateWM, evictWM int64) (*Result, error) {
	if err := in.check(a.cfg.Aggs); err != nil {
		return nil, err
	}
	for i, ac := range a.accs {
		if col := a.cfg.Aggs[i].Column; col >= 0 {
			if err := ac.checkColumn(&in.Columns[col]); err != nil {
				return nil, err
			}
		}
	}
	if evictWM < lateWM {
		return nil, fmt.Errorf("gold: eviction watermark %d is below the late-row watermark %d", evictWM, lateWM)
	}
	if err := a.checkKeyIDs(in); err != nil {
		return nil, err
	}
	a.batch++
	r := &a.res
	*r = Result{Rows: r.Rows[:0], LateRows: r.LateRows[:0], LateWatermarkMs: lateWM}
	a.pairSlot, a.pairRow, a.touched = a.pairSlot[:0], a.pairRow[:0], a.touched[:0]
	if a.cfg.Session == nil {
		// A row lands in n windows: size the (slot, row) pairs once for the batch.
		pairs := len(in.EventTime) * max(a.cfg.Window.n, 1)
		a.pairSlot, a.pairRow = slices.Grow(a.pairSlot, pairs), slices.Grow(a.pairRow, pairs)
	}
	clear(a.aggBuf) // drop last batch's sketch references
	a.aggBuf = a.aggBuf[:0]
	clear(a.lateSeen)
	lateUs := lateWM * 1000
	dropLate := a.cfg.Mode != Complete

	a.evictedAt = evictWM * 1000
	// In Append mode a batch whose watermark closes groups in state emits and frees them
	// before it opens its new groups (evictFirst), so the state never holds both at once.
	early := a.cfg.Session == nil && a.cfg.Mode == Append && a.evictedAt >= a.minEnd
	var err error
	if a.cfg.Session != nil {
		err = a.sessionBatch(in, lateUs, dropLate)
		if r.NumCorrectionRows > 0 {
			slices.Sort(r.LateRows)
		}
		a.settlePending()
	} else {
		a.windowBatch(in, lateUs, dropLate, early)
	}
	if err != nil {
		return nil, err
	}
	if err := a.updatePairs(in); err != nil {
		return nil, err
	}
	updated := 0
	if early {
		if updated, err = a.evictFirst(in); err != nil {
			return nil, err
		}
	}
	if a.cfg.Session != nil {
		for _, s := range a.pairSlot {
			a.touch(s)
		}
	}
	for _, ac := range a.accs {
		if ac.seen != nil {
			for _, s := range a.touched {
				if a.groups[s].live() {
					ac.measure(s)
				}
			}
		}
	}
	r.NumRowsDroppedByWatermark = int64(len(a.lateSeen))
	r.NumRowsUpdated = int64(updated + len(a.touched))
	if !early {
		if err := a.emit(a.evictedAt, in.Out); err != nil {
			return nil, err
		}
	}
	if a.tracksSettled() {
		a.evictSettled(a.evictedAt)
	}
	r.NumRowsTotal = a.live
	return r, nil
}

// updatePairs folds the batch's (slot, row) pairs into every aggregate.
func (a *Aggregation) updatePairs(in *Input) error {
	for i, ac := range a.accs {
		var col *Column
		if c := a.cfg.Aggs[i].Column; c >= 0 {
			col = &in.Columns[c]
		}
		if err := ac.update(a.pairSlot, a.pairRow, col); err != nil {
			return err
		}
	}
	return nil
}

// pendingPair is a row's window waiting for its group (placePairs), with the key's id and
// hash.
type pendingPair struct {
	start    int64
	row, key int32
	keyHash  uint32
}

// deferredRow is a row with windows the batch's watermark leaves open, with its key's id and
// hash: its open windows wait for their groups until the closed groups are freed. A row, not
// each of its windows, is kept (12 bytes, where a pair took 24 and a sliding window's row
// defers two or more): the windows are assigned again when they are placed.
type deferredRow struct {
	row, key int32
	keyHash  uint32
}

// evictFirst runs after the pairs in closed windows are aggregated: it emits and frees the
// closed groups, then places the deferred rows' open windows (their new groups reuse the
// freed slots) and aggregates them. Without it, a backlog's second batch held the first batch's groups, all
// closed by then, beside its own new ones: twice the state at the moment the heap peaks. The
// result is the same: no open window can reach a closed group, the emitted rows are the
// same groups with the same values, and the state keeps the same groups (in other slots).
// It reports the groups updated before the eviction that it evicted.
func (a *Aggregation) evictFirst(in *Input) (int, error) {
	if err := a.emit(a.evictedAt, in.Out); err != nil {
		return 0, err
	}
	live := a.touched[:0]
	for _, s := range a.touched {
		if a.groups[s].live() {
			live = append(live, s)
		}
	}
	gone := len(a.touched) - len(live)
	a.touched = live
	a.pairSlot, a.pairRow = a.pairSlot[:0], a.pairRow[:0]
	a.placeDeferred(in)
	return gone, a.updatePairs(in)
}

// placeDeferred places the deferred rows' open windows (those ending after the eviction
// watermark), row by row and in Assign's order within a row: the order in which windowBatch
// met them, so the groups get the slots they got when the pairs were kept.
func (a *Aggregation) placeDeferred(in *Input) {
	spec := a.cfg.Window
	var pendBuf [placeAhead]pendingPair
	pending := pendBuf[:0]
	for _, d := range a.deferred {
		a.winBuf = spec.Assign(a.winBuf[:0], in.EventTime[d.row])
		for _, w := range a.winBuf {
			if w.End <= a.evictedAt {
				continue // placed by windowBatch, or late
			}
			if pending = append(pending, pendingPair{w.Start, d.row, d.key, d.keyHash}); len(pending) == placeAhead {
				a.placePairs(pending)
				pending = pending[:0]
			}
		}
	}
	a.placePairs(pending)
	for _, d := range a.deferred {
		a.keyRefs[d.key]-- // the pin windowBatch took; the groups now hold the key
	}
	a.deferred = a.deferred[:0]
}

func (a *Aggregation) touch(s int32) {
	if g := &a.groups[s]; g.touched != a.batch {
		g.touched = a.batch
		a.touched = append(a.touched, s)
	}
}

func (a *Aggregation) markLate(row int32, start int64, key []byte, rowLate *bool) {
	if !*rowLate {
		*rowLate = true
		a.res.LateRows = append(a.res.LateRows, row)
	}
	lk := lateKey{start, string(key)}
	if _, ok := a.lateSeen[lk]; !ok {
		a.lateSeen[lk] = struct{}{}
	}
}

// windowBatch places each row's windows in their groups; with deferOpen, a row's windows the
// eviction watermark leaves open are deferred (evictFirst: the row is kept), its key pinned
// until they are placed so that freeing the closed groups cannot drop the key.
func (a *Aggregation) windowBatch(in *Input, lateUs int64, dropLate, deferOpen bool) {
	spec := a.cfg.Window
	a.deferred = a.deferred[:0]
	if deferOpen {
		// Sized once for the batch, as the pairs are: grown by append it was copied on the way.
		a.deferred = slices.Grow(a.deferred, len(in.EventTime))
	}
	var lastKey []byte
	lastID := int32(-1)
	var lastHash uint32
	var pendBuf [placeAhead]pendingPair
	pending := pendBuf[:0]
	for i, t := range in.EventTime {
		if in.EventValid != nil && !in.EventValid[i] {
			continue
		}
		k := in.key(i)
		keyID := int32(-1)
		var keyHash uint32
		rowLate, deferred := false, false
		if spec.n == 1 {
			// Tumbling (and size == slide generally): one window, no candidate list.
			start := spec.lastStart(t)
			a.winBuf = append(a.winBuf[:0], Window{start, start + spec.Size})
		} else {
			a.winBuf = spec.Assign(a.winBuf[:0], t)
		}
		for _, w := range a.winBuf {
			if dropLate && w.End <= lateUs {
				a.markLate(int32(i), w.Start, k, &rowLate)
				continue
			}
			if keyID < 0 {
				// Runs of one key are common (sorted or single-key inputs); skip the hash then.
				if in.KeyIDs != nil {
					keyID, keyHash = in.KeyIDs[i], in.KeyHashes[i] // interned by the share
				} else if lastID >= 0 && bytes.Equal(k, lastKey) {
					keyID, keyHash = lastID, lastHash
				} else {
					keyID, keyHash = a.internKey(k)
					lastKey, lastID, lastHash = k, keyID, keyHash
				}
			}
			if deferOpen && w.End > a.evictedAt {
				if !deferred {
					deferred = true
					a.deferred = append(a.deferred, deferredRow{int32(i), keyID, keyHash})
					a.keyRefs[keyID]++
				}
				continue
			}
			if len(pending) == 0 && a.gtab.Size() < loadAheadEntries {
				// A small index: placed at once (placePairs would not load ahead).
				a.pairSlot = append(a.pairSlot, a.windowSlot(w.Start, keyID, keyHash))
				a.pairRow = append(a.pairRow, int32(i))
				continue
			}
			// Placed placeAhead pairs at a time, in order (placePairs).
			if pending = append(pending, pendingPair{w.Start, int32(i), keyID, keyHash}); len(pending) == placeAhead {
				a.placePairs(pending)
				pending = pending[:0]
			}
		}
	}
	a.placePairs(pending)
}

func (a *Aggregation) sessionBatch(in *Input, lateUs int64, dropLate bool) error {
	if a.cfg.Session.Gap == 0 && in.SessionGap == nil && len(in.EventTime) > 0 {
		return fmt.Errorf("%w: session gap is per row but the batch has no gap column", ErrBadInput)
	}
	a.items = a.items[:0]
	track := a.tracksSettled()
	for i, t := range in.EventTime {
		if in.EventValid != nil && !in.EventValid[i] {
			continue
		}
		gap := a.cfg.Session.Gap
		if in.SessionGap != nil {
			if in.SessionGapValid != nil && !in.SessionGapValid[i] {
				continue
			}
			gap = in.SessionGap[i]
		}
		w, ok := ProtoSession(t, gap)
		if !ok {
			continue
		}
		k := in.key(i)
		if dropLate && w.End <= lateUs {
			rowLate := false
			a.markLate(int32(i), w.Start, k, &rowLate)
			if track {
				id, _ := a.internKey(k)
				a.pendingSettle = append(a.pendingSettle, sessItem{key: id, w: w, row: int32(i), slot: -1})
			}
			continue
		}
		id, _ := a.internKey(k)
		if track && a.touchesSettled(id, w) {
			// A correction: merging it into state would emit a session overlapping one that
			// gold or the quarantine already holds (session.go).
			a.res.LateRows = append(a.res.LateRows, int32(i))
			a.res.NumCorrectionRows++
			a.pendingSettle = append(a.pendingSettle, sessItem{key: id, w: w, row: int32(i), slot: -1})
			continue
		}
		a.items = append(a.items, sessItem{key: id, w: w, row: int32(i), slot: -1})
	}
	// Pull in the stored sessions of every key that has input, then merge per key by start.
	n := len(a.items)
	seen := map[int32]bool{}
	for _, it := range a.items[:n] {
		if seen[it.key] {
			continue
		}
		seen[it.key] = true
		for _, s := range a.sessions[it.key] {
			a.items = append(a.items, sessItem{key: it.key, w: a.window(s), row: -1, slot: s})
		}
	}
	slices.SortFunc(a.items, func(x, y sessItem) int {
		if x.key != y.key {
			return cmp.Compare(int64(x.key), int64(y.key))
		}
		if x.w.Start != y.w.Start {
			return cmp.Compare(x.w.Start, y.w.Start)
		}
		if x.slot != y.slot { // stored first, so it becomes the merge target
			return cmp.Compare(int64(y.slot), int64(x.slot))
		}
		return cmp.Compare(int64(x.row), int64(y.row))
	})
	for i := 0; i < len(a.items); {
		// One merged session: items[i:j] of one key, each start <= the running end.
		key, cur := a.items[i].key, a.items[i].w
		j := i + 1
		for j < len(a.items) && a.items[j].key == key && a.items[j].w.Start <= cur.End {
			cur.End = max(cur.End, a.items[j].w.End)
			j++
		}
		target, fused := int32(-1), false
		for _, it := range a.items[i:j] {
			if it.slot < 0 {
				continue
			}
			if target < 0 {
				target = it.slot
				continue
			}
			if !fused {
				// Spark deletes every stored session of a fusion and inserts the fused one, so
				// the reused target counts as removed too (S5: 2 removed, 1 updated).
				fused = true
				a.res.NumRowsRemoved++
			}
			for _, ac := range a.accs {
				if err := ac.mergeSlot(target, it.slot); err != nil {
					return err
				}
			}
			a.dropSession(it.slot)
		}
		if target < 0 {
			target = a.newSlot(cur, key)
			a.sessions[key] = append(a.sessions[key], target)
		}
		a.groups[target].start, a.ends[target] = cur.Start, cur.End
		for _, it := range a.items[i:j] {
			if it.slot < 0 {
				a.pairSlot = append(a.pairSlot, target)
				a.pairRow = append(a.pairRow, it.row)
			}
		}
		a.sortSessions(key)
		i = j
	}
	return nil
}

func (a *Aggregation) sortSessions(key int32) {
	ss := a.sessions[key]
	slices.SortFunc(ss, func(x, y int32) int { return cmp.Compare(a.groups[x].start, a.groups[y].start) })
}

// dropSession removes a stored session fused into another one.
func (a *Aggregation) dropSession(s int32) {
	key := a.groups[s].key
	ss := a.sessions[key]
	if i := slices.Index(ss, s); i >= 0 {
		a.sessions[key] = slices.Delete(ss, i, i+1)
	}
	a.res.NumRowsRemoved++
	a.freeSlot(s)
}

// emit outputs the groups the mode emits, in window and key order, into out (the gold
// columns) or, without out, into Result.Rows; then it evicts the groups the watermark closed.
func (a *Aggregation) emit(evictUs int64, out *pq.Batch) error {
	r := &a.res
	a.emitSlots = a.emitSlots[:0]
	switch a.cfg.Mode {
	case Complete:
		for s := range a.groups {
			if a.groups[s].live() {
				a.emitSlots = append(a.emitSlots, int32(s))
			}
		}
	case Update:
		for _, s := range a.touched {
			if a.groups[s].live() {
				a.emitSlots = append(a.emitSlots, s)
			}
		}
	}
	a.evictList = a.evictList[:0]
	if a.cfg.Mode != Complete && evictUs >= a.minEnd {
		// Only batches whose watermark passed some window end pay for this scan.
		a.collectEvictions(evictUs)
	}
	if a.cfg.Mode == Append {
		a.emitSlots = append(a.emitSlots, a.evictList...)
	}
	r.NumRowsOutput = int64(len(a.emitSlots))
	if out != nil {
		if err := a.checkOut(out); err != nil {
			return err
		}
		if a.cfg.Mode == Update {
			slices.Sort(a.emitSlots) // slot order: the state read front to back (emitcols.go)
		}
		perm := a.orderRows(a.emitSlots)
		a.growOut(out, len(a.emitSlots))
		if err := a.writeColumns(out, a.emitSlots, perm); err != nil {
			return err
		}
		a.releaseEmitBuffers(len(a.emitSlots))
	} else {
		a.sortSlots(a.emitSlots)
		for _, s := range a.emitSlots {
			a.appendRow(s, a.cfg.Mode != Append)
		}
	}
	track := a.tracksSettled()
	for _, s := range a.evictList {
		if a.cfg.Session != nil {
			key := a.groups[s].key
			ss := a.sessions[key]
			if i := slices.Index(ss, s); i >= 0 {
				a.sessions[key] = slices.Delete(ss, i, i+1)
			}
			if len(a.sessions[key]) == 0 {
				// The key may live on for its settled extents: keep the map to the keys in state.
				delete(a.sessions, key)
			}
			if track {
				a.settle(key, a.window(s))
			}
		}
	}
	a.freeEvicted()
	r.NumRowsRemoved += int64(len(a.evictList))
	return nil
}

// collectEvictions lists in evictList the live groups whose window ends at or before evictUs,
// and makes minEnd the least window end of the others.
func (a *Aggregation) collectEvictions(evictUs int64) {
	a.evictList = a.evictList[:0]
	a.minEnd = math.MaxInt64
	size := a.cfg.Window.Size
	for s := range a.groups {
		g := &a.groups[s]
		end := g.start + size
		if a.ends != nil {
			end = a.ends[s]
		}
		switch {
		case !g.live():
		case end <= evictUs:
			a.evictList = append(a.evictList, int32(s))
		default:
			a.minEnd = min(a.minEnd, end)
		}
	}
}

// and over and left the old arrays to the collector.
func (a *Aggregation) growOut(out *pq.Batch, n int) {
	if n == 0 {
		return
	}
	keyBytes := 0
	if k, nk := a.keyIDs.Len(), a.cfg.NumKeys; k > 0 && nk > 0 {
		keyBytes = n * ((len(a.keyArena)-a.keyGarbage)/k + 1) / nk
	}
	for i := range out.Columns {
		if i >= 1 && i <= a.cfg.NumKeys {
			out.Columns[i].Grow(n, keyBytes)
		} else {
			out.Columns[i].Grow(n, 0)
		}
	}
}

// checkOut checks that out has the gold columns of this aggregation (ColWindow, the keys,
// each aggregate's columns, ColLateRows, the exact sums).
func (a *Aggregation) checkOut(out *pq.Batch) error {
	want := 2 + a.cfg.NumKeys
	for i := range a.cfg.Aggs {
		want += aggregateWidth(a.cfg.Aggs[i].Fn)
		if a.cfg.Aggs[i].ExactSum() {
			want++
		}
	}
	if len(out.Columns) != want {
		return fmt.Errorf("%w: the gold batch has %d columns, the aggregation writes %d", ErrBadInput, len(out.Columns), want)
	}
	return nil
}

// appendRow copies group s into the result; sketches are cloned when the group stays in state.
func (a *Aggregation) appendRow(s int32, clone bool) {
	g := &a.groups[s]
	// One backing array for every row's aggregates: no allocation per emitted row.
	n := len(a.aggBuf)
	for _, ac := range a.accs {
		a.aggBuf = append(a.aggBuf, ac.value(s, clone))
	}
	a.res.Rows = append(a.res.Rows, OutRow{Window: a.window(s), Key: a.key(g.key), Aggs: a.aggBuf[n:len(a.aggBuf):len(a.aggBuf)]})
}
