package late

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// replayShare lets one read of silver serve the first pass (hashRange: the recomputed
// windows' row hashes) of every gold of a replay run. Each gold's replay read and decoded
// silver again, the same columns over about the same range: at 1k keys reading silver was
// 63% of a replay, at 100k 39-44% (ANALYSIS.md, session 17). The first gold whose first pass
// runs also aggregates the later golds that can share its read (sharePeers) and leaves their
// sums here; a later gold takes its own only when it would compute the same ones: the same
// silver version, the same window starts and the same row hash (its gold's metadata id and
// schema). Otherwise (its merge-late moved its source version, its schema evolved, a retry
// after a conflict) it reads silver itself, as before. The golds still merge, plan and
// commit one after another: only the reading is shared. It is safe for concurrent use.
type replayShare struct {
	mu    sync.Mutex
	golds []*spec.Aggregation // the run's, in order
	sums  map[string]*sharedSums
}

func newReplayShare(golds []*spec.Aggregation) *replayShare {
	return &replayShare{golds: golds, sums: map[string]*sharedSums{}}
}

// sharedSums is a gold's first pass computed during an earlier gold's, and what it was
// computed for.
type sharedSums struct {
	srcVersion int64
	lo, hi     int64
	hashID     string
	sums       table.GroupSums
	rows       int64 // the source rows of the gold's range, each counted once
}

// after returns the golds of the run after the one named name.
func (s *replayShare) after(name string) []*spec.Aggregation {
	if s == nil {
		return nil
	}
	for i, g := range s.golds {
		if g.Name == name {
			return s.golds[i+1:]
		}
	}
	return nil
}

// take removes and returns the sums left for gold name (nil: none).
func (s *replayShare) take(name string) *sharedSums {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.sums[name]
	delete(s.sums, name)
	return r
}

func (s *replayShare) put(name string, r *sharedSums) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sums[name] = r
}

// goldHashID is what a gold's RowHasher depends on: its table's metadata id and its schema.
func goldHashID(snap *txlog.Snapshot, schema *txlog.StructType) (string, error) {
	ss, err := txlog.MarshalSchema(schema)
	if err != nil {
		return "", err
	}
	return snap.Metadata().ID + "\x00" + ss, nil
}

// passTarget is one gold aggregated by a first pass: its windows [lo, hi], the hasher of its
// gold rows and the sums of their hashes by window start.
type passTarget struct {
	name   string
	a      *agg
	h      *table.RowHasher
	lo, hi int64
	hashID string
	sums   table.GroupSums
	rows   int64
	pool   *aggPool
	out    *pq.Batch // the rows hashSums cannot hash from the state, built to be hashed
}

// sum adds the hashes of agg's gold rows to t.sums by window start: from the tables' state
// where hashSums can, else from the rows built.
func (t *passTarget) sum(agg *hashAgg) error {
	ok, err := agg.hashSums(t.h, t.sums)
	if err != nil || ok {
		return err
	}
	// A window column hashSums does not encode: build the rows and hash them.
	if t.out == nil {
		if t.out, err = pq.NewBatch(t.a.gold); err != nil {
			return err
		}
	}
	flush := func() error {
		cols, err := pq.Conform(t.a.gold, t.out)
		if err != nil {
			return err
		}
		for i := range t.out.Len() {
			if g, hash, ok := t.h.Row(cols, i); ok {
				t.sums.Add(g, hash)
			}
		}
		t.out.Reset()
		return nil
	}
	if _, err = agg.emitUnordered(t.out, flush); err != nil {
		return err
	}
	return flush()
}

// freshSums is hashRange's result for k, from the sums an earlier gold's pass left for it
// when they fit, else from a pass of its own that also computes the later golds' sums.
func (k *windowAgg) freshSums(ctx context.Context, h *table.RowHasher, p *tagPlan) (table.GroupSums, error) {
	share := k.opts.share
	if s := share.take(k.g.Name); s != nil && !k.src.bronze && s.srcVersion == k.src.snap.Version() && s.lo == p.lo && s.hi == p.hi {
		if id, err := goldHashID(k.rw.snap, k.rw.a.gold); err == nil && id == s.hashID {
			p.countedAll = true
			k.replay.InputRows += s.rows
			return s.sums, nil
		}
	}
	peers := k.sharePeers(ctx, p.lo)
	if len(peers) == 0 {
		return k.hashRange(ctx, h, p)
	}
	lead := &passTarget{name: k.g.Name, a: k.rw.a, h: h, lo: p.lo, hi: p.hi}
	if err := sharedHashRange(ctx, k.src, append([]*passTarget{lead}, peers...), k.opts.workers(), k.opts.slicePairs()); err != nil {
		return nil, err
	}
	// Every slice of the range was read and its rows counted (bad spans too: the peers'
	// are not known yet), so the rewrite counts none again.
	p.countedAll = true
	k.replay.InputRows += lead.rows
	for _, t := range peers {
		share.put(t.name, &sharedSums{srcVersion: k.src.snap.Version(), lo: t.lo, hi: t.hi, hashID: t.hashID, sums: t.sums, rows: t.rows})
	}
	return lead.sums, nil
}

// sharePeers returns the later golds of the run whose first pass can be computed from k's
// read of silver: window aggregations hashAgg computes, over the same event time, with
// window starts on the grid of k's (same slide, lo one of its starts). A gold that cannot be
// resolved now is left out: its own replay reports why.
func (k *windowAgg) sharePeers(ctx context.Context, lo int64) []*passTarget {
	if k.src.bronze {
		return nil
	}
	var out []*passTarget
	for _, g := range k.opts.share.after(k.g.Name) {
		if t := k.peer(ctx, g, lo); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// peer is gold g as a target of k's first pass (nil: it cannot share it).
func (k *windowAgg) peer(ctx context.Context, g *spec.Aggregation, lo int64) *passTarget {
	a := k.rw.a
	if g.OutputMode == spec.OutputComplete || g.Window.Session {
		return nil
	}
	gsnap, err := k.opts.open(g.Table).Log().Snapshot(ctx)
	if err != nil {
		return nil
	}
	gschema, err := gsnap.Schema()
	if err != nil || checkGoldWritable(gsnap, gschema, g) != nil {
		return nil
	}
	b, err := resolve(&k.opts.Query, g, k.src.schema, gschema)
	if err != nil || b.session != nil || !canHashAgg(b) || b.evName != a.evName ||
		b.window.Slide != a.window.Slide || alignStart(lo, b.window) != lo {
		return nil
	}
	blo, bhi, ok := windowRange(b, k.r, k.st.evictMs)
	if !ok {
		return nil
	}
	h, err := table.NewRowHasher(gsnap, b.gold, *goldRowTags())
	if err != nil || !canPlanByTags(h, gsnap.Files()) {
		return nil // the sums would go unused
	}
	id, err := goldHashID(gsnap, b.gold)
	if err != nil {
		return nil
	}
	return &passTarget{name: g.Name, a: b, h: h, lo: blo, hi: bhi, hashID: id}
}

// canPlanByTags reports whether a replay of the gold of files may use its first pass: a file
// with neither a trusted tag nor statistics may hold any window, so planByTags gives up
// before its first pass (a gold written before the tags, until a replay rewrites it).
func canPlanByTags(h *table.RowHasher, files []*txlog.Add) bool {
	for _, f := range files {
		if _, ok := h.Trusted(f); ok {
			continue
		}
		if _, _, ok := windowStartStats(f); !ok {
			return false
		}
	}
	return true
}

// sharedHashRange is hashRange for several golds over one read of the source: the union of
// their window starts is cut into slices (their pair budget shared by the pairs a row makes
// in every gold), each slice read once for the columns of all, each gold's partial tables
// fed from the same batches, and each gold's rows counted over its own range,
// [lo, hi+size).
func sharedHashRange(ctx context.Context, src *replaySource, ts []*passTarget, workers int, slicePairs int64) error {
	widest, jlo, jhi, sizes := ts[0], ts[0].lo, ts[0].hi, int64(0)
	var also []*agg
	for i, t := range ts {
		if t.a.window.Size > widest.a.window.Size {
			widest = t
		}
		jlo, jhi, sizes = min(jlo, t.lo), max(jhi, t.hi), sizes+t.a.window.Size
		t.sums, t.pool = table.GroupSums{}, &aggPool{}
		if i > 0 {
			also = append(also, t.a)
		}
	}
	pairs := slicePairs
	if pairs > 0 {
		// In floats: a year-long window in µs times the budget overflows an int64.
		pairs = max(1, int64(float64(slicePairs)*float64(widest.a.window.Size)/float64(sizes)))
	}
	cuts := windowSlices(src, widest.a, jlo, jhi, pairs)
	parts := make([]*slicePartials, len(ts))
	for n, sl := range cuts {
		own0, own1 := sl[0], int64(math.MaxInt64)
		if n+1 < len(cuts) {
			own1 = cuts[n+1][0]
		}
		for i, t := range ts {
			if n+1 == len(cuts) {
				t.pool.setLast()
			}
			parts[i] = newSlicePartials(src, t.a, max(sl[0], t.lo), min(sl[1], t.hi), workers, t.pool)
			if i > 0 && slices.Equal(t.a.keyNames, ts[0].a.keyNames) {
				// The lead's key ids serve this gold, and with its seed their hashes too.
				parts[i].keysFrom, parts[i].seed = parts[0], parts[0].seed
			}
		}
		err := src.readBatchesFor(ctx, ts[0].a, also, sl[0], sl[1]+widest.a.window.Size, workers, true, func(w int, s *source, sel []int32) error {
			for i, t := range ts {
				bound := s
				if i > 0 {
					var err error
					if bound, err = t.a.source(s.b); err != nil {
						return err
					}
				}
				if err := parts[i].add(w, bound, sel, max(own0, t.lo), min(own1, t.hi+t.a.window.Size)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := sumTargets(ts, parts, workers); err != nil {
			return err
		}
	}
	return nil
}

// sumTargets merges each target's partial tables and hashes its groups, the targets on up to
// workers goroutines at once: each target's merge and hashSums touch only its own tables,
// pool and sums, and run one after the other they left a core idle for about half of a
// 100k-key replay (merging 15%, hashing 34%, ANALYSIS.md session 19).
func sumTargets(ts []*passTarget, parts []*slicePartials, workers int) error {
	errs := make([]error, len(ts))
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	for i, t := range ts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = t.sumParts(parts[i])
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
