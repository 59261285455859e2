package config

import (
	"fmt"
	"strings"
)

// Derived tables (docs/derived-tables.md): a gold whose source names another gold is kept from
// that gold's change feed instead of from a stream. Its windows are over the upstream's
// window.start and nest in the upstream's (a rollup), its keys are a subset of the upstream's and
// its aggregates fold the upstream's aggregate columns, so that each level equals a batch
// group-by of the valid events at its grain.

// DerivedTimeColumn is the upstream column a derived table's windows are over.
const DerivedTimeColumn = "window.start"

// UpstreamGold is the gold g is derived from: g.Source when it names a gold. A source or a join
// of that name wins (their names were there first), so a derived table's source must be a gold
// name no source or join has.
func (p *Pipeline) UpstreamGold(g Gold) (*Gold, bool) {
	if g.Source == "" {
		return nil, false
	}
	if _, ok := p.SourceByName(g.Source); ok {
		return nil, false
	}
	if _, ok := p.JoinByName(g.Source); ok {
		return nil, false
	}
	return p.GoldByName(g.Source)
}

// RootGold is the gold at the top of g's derived chain, the one a source or a join feeds: g
// itself when it is not derived. The config must be valid (no cycle).
func (p *Pipeline) RootGold(g Gold) Gold {
	for {
		up, ok := p.UpstreamGold(g)
		if !ok {
			return g
		}
		g = *up
	}
}

// IsDerived reports whether g is kept from another gold's change feed.
func (p *Pipeline) IsDerived(g Gold) bool {
	_, ok := p.UpstreamGold(g)
	return ok
}

// DerivedOf lists the golds derived directly from the gold named name, in config order.
func (p *Pipeline) DerivedOf(name string) []Gold {
	var out []Gold
	for _, g := range p.Gold {
		if up, ok := p.UpstreamGold(g); ok && up.Name == name {
			out = append(out, g)
		}
	}
	return out
}

// DerivedOrder lists the derived golds so that each comes after its upstream (levels in
// order: every level-2 table, then level 3, ...), config order within a level. Golds on a
// cycle (refused by Validate) are left out.
func (p *Pipeline) DerivedOrder() []Gold {
	var out []Gold
	level := map[string]bool{}
	for _, g := range p.Gold {
		if !p.IsDerived(g) {
			level[g.Name] = true
		}
	}
	for {
		var next []Gold
		for _, g := range p.Gold {
			if level[g.Name] {
				continue
			}
			if up, ok := p.UpstreamGold(g); ok && level[up.Name] {
				next = append(next, g)
			}
		}
		if len(next) == 0 {
			return out
		}
		for _, g := range next {
			level[g.Name] = true
		}
		out = append(out, next...)
	}
}

// Rollup kinds: what a derived aggregate does with its upstream column(s).
const (
	RollupSum = "sum" // add the upstream column (a sum, or a count)
	RollupMin = "min" // the least upstream value (recomputed, cannot retract)
	RollupMax = "max" // the greatest upstream value (recomputed, cannot retract)
	RollupAvg = "avg" // sum of <col>_sum over sum of <col>_count
)

// Rollup is how one aggregate of a derived table is computed from its upstream's columns.
type Rollup struct {
	Kind string
	// Column is the upstream aggregate column (for avg: the avg, whose Column+"_sum" and
	// Column+"_count" are read).
	Column string
	// Fn is what the output column is, seen from the next level: count, sum, min, max or avg.
	Fn string
}

// RollupOf resolves aggregate a of a gold derived from up: the upstream column it folds and
// how, or an error saying why it cannot be kept exactly (naming both tables).
func (p *Pipeline) RollupOf(up Gold, name string, a Aggregate) (Rollup, error) {
	if a.Column == "" {
		if a.Fn == FnCount {
			return Rollup{}, fmt.Errorf("gold %s counts rows of gold %s, which are windows, not events: name the upstream count column, e.g. {fn: sum, column: %s}",
				name, up.Name, p.exampleCount(up))
		}
		return Rollup{}, fmt.Errorf("required: %s over gold %s needs one of its aggregate columns (%s)", a.Fn, up.Name, upstreamAggs(up))
	}
	upFn, ok := p.outputFn(up, a.Column)
	if !ok {
		return Rollup{}, fmt.Errorf("column %q is not an aggregate column of gold %s (its aggregates: %s)", a.Column, up.Name, upstreamAggs(up))
	}
	refuse := func(why string) (Rollup, error) {
		return Rollup{}, fmt.Errorf("gold %s cannot compute %s over %s (a %s of gold %s): %s", name, a.Fn, a.Column, upFn, up.Name, why)
	}
	switch a.Fn {
	case FnCount:
		if upFn != FnCount {
			return refuse("a count over a rollup adds an upstream count; name a count column")
		}
		return Rollup{Kind: RollupSum, Column: a.Column, Fn: FnCount}, nil
	case FnSum:
		if upFn != FnCount && upFn != FnSum {
			return refuse("a sum adds upstream sums or counts; the sum of a min, max or avg is not an aggregate of the events")
		}
		return Rollup{Kind: RollupSum, Column: a.Column, Fn: upFn}, nil
	case FnMin, FnMax:
		if upFn != a.Fn {
			return refuse(fmt.Sprintf("a %s over a rollup takes the upstream %s of the same column", a.Fn, a.Fn))
		}
		return Rollup{Kind: a.Fn, Column: a.Column, Fn: a.Fn}, nil
	case FnAvg:
		if upFn != FnAvg {
			return refuse(fmt.Sprintf("an avg over a rollup is the sum of the upstream's %s%s over the sum of its %s%s, which only an upstream avg keeps",
				a.Column, "_sum", a.Column, "_count"))
		}
		return Rollup{Kind: RollupAvg, Column: a.Column, Fn: FnAvg}, nil
	case FnApproxCountDistinct, FnApproxPercentile:
		return refuse("sketch aggregates are not supported on a derived table yet")
	}
	return refuse("unknown aggregate function")
}

// outputFn is what the aggregate column col of gold g is (count, sum, min, max, avg), seen
// by a gold derived from it.
func (p *Pipeline) outputFn(g Gold, col string) (string, bool) {
	for _, a := range g.Aggregates {
		if a.As != col {
			continue
		}
		up, derived := p.UpstreamGold(g)
		if !derived || up.Name == g.Name {
			return a.Fn, true
		}
		r, err := p.RollupOf(*up, g.Name, a)
		if err != nil {
			return a.Fn, true
		}
		return r.Fn, true
	}
	return "", false
}

func (p *Pipeline) exampleCount(up Gold) string {
	for _, a := range up.Aggregates {
		if fn, _ := p.outputFn(up, a.As); fn == FnCount {
			return a.As
		}
	}
	return "count"
}

func upstreamAggs(g Gold) string {
	names := make([]string, 0, len(g.Aggregates))
	for _, a := range g.Aggregates {
		names = append(names, a.As)
	}
	return strings.Join(names, ", ")
}

// derivedGold checks gold[i] (path), derived from up: no cycle, a tumbling window nesting the
// upstream's, keys a subset of the upstream's, aggregates that fold upstream columns.
func (v *validator) derivedGold(path string, g Gold, up *Gold) {
	if chain, ok := v.p.derivedCycle(g); ok {
		v.fail(path+".source", "gold %s is derived from itself through %s: a derived table needs an upstream that a stream keeps", g.Name, chain)
		return
	}
	if !up.ChangeFeed() {
		v.fail(path+".source", "gold %s is kept from the change feed of gold %s, which has change_data_feed: false", g.Name, up.Name)
	}
	if g.TimeColumn != "" && g.TimeColumn != DerivedTimeColumn {
		v.fail(path+".time_column", "%q: gold %s rolls up the windows of gold %s, so its time column is %s (leave time_column out)", g.TimeColumn, g.Name, up.Name, DerivedTimeColumn)
	}
	if g.OutputMode != OutputAppend {
		v.fail(path+".output_mode", "%q: gold %s, derived from gold %s, is written in append mode (a window when the upstream's watermark passes it, corrected in place after)", g.OutputMode, g.Name, up.Name)
	}
	v.nests(path+".window", g, up)
	keys := map[string]bool{}
	for _, k := range up.GroupBy {
		keys[k] = true
	}
	for i, k := range g.GroupBy {
		if !keys[k] {
			v.fail(fmt.Sprintf("%s.group_by[%d]", path, i), "%q is not a group_by column of gold %s (%s): a derived table's keys are a subset of its upstream's",
				k, up.Name, strings.Join(up.GroupBy, ", "))
		}
	}
	if len(g.Aggregates) == 0 {
		v.fail(path+".aggregates", "required: expected at least one aggregate over gold %s, e.g. - {fn: sum, column: %s}", up.Name, v.p.exampleCount(*up))
	}
	for i, a := range g.Aggregates {
		if _, err := v.p.RollupOf(*up, g.Name, a); err != nil {
			v.fail(fmt.Sprintf("%s.aggregates[%d]", path, i), "%v", err)
		}
	}
}

// nests checks that g's window is tumbling and that every window of up lies inside one of g's.
func (v *validator) nests(path string, g Gold, up *Gold) {
	w, uw := g.Window, up.Window
	if w.Type != WindowTumbling {
		v.fail(path+".type", "%q: gold %s, derived from gold %s, needs a tumbling window (each upstream window inside exactly one of its windows)", w.Type, g.Name, up.Name)
		return
	}
	if uw.Type != WindowTumbling {
		v.fail(path+".type", "gold %s is derived from gold %s, whose %s windows overlap or vary in length: its rows cannot be added without counting events twice; derive from a tumbling gold", g.Name, up.Name, uw.Type)
		return
	}
	d, u := w.Size.Duration, uw.Size.Duration
	if d <= 0 || u <= 0 || w.Size.Err() != nil || uw.Size.Err() != nil {
		return // reported with the window
	}
	if d%u != 0 {
		v.fail(path+".size", "window %s of gold %s is not a multiple of window %s of gold %s: an upstream window would straddle two of its windows", w.Size, g.Name, uw.Size, up.Name)
		return
	}
	if off := (w.StartTime.Duration - uw.StartTime.Duration) % u; off != 0 {
		v.fail(path+".start_time", "windows of gold %s (start_time %s) are not aligned with those of gold %s (start_time %s): they must differ by a multiple of %s",
			g.Name, FormatDuration(w.StartTime.Duration), up.Name, FormatDuration(uw.StartTime.Duration), uw.Size)
	}
}

// derivedCycle reports the chain from g back to itself when following sources loops.
func (p *Pipeline) derivedCycle(g Gold) (string, bool) {
	chain := []string{g.Name}
	seen := map[string]bool{g.Name: true}
	cur := g
	for {
		up, ok := p.UpstreamGold(cur)
		if !ok {
			return "", false
		}
		chain = append(chain, up.Name)
		if up.Name == g.Name {
			return strings.Join(chain, " -> "), true
		}
		if seen[up.Name] {
			return "", false // a cycle further up: reported at its own entries
		}
		seen[up.Name] = true
		cur = *up
	}
}
