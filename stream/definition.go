package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrDefinitionChanged reports a stateful part of a query (a gold aggregation, a join, the
// dedup of silver) whose definition in the config is not the one its table and state were
// written with. Its state cannot be carried over, so the query stops before it reads any.
var ErrDefinitionChanged = errors.New("stream: definition changed")

// PropDefinition is the table property (metaData configuration) that records the definition
// a silver, gold or joined table is written under, as canonical JSON: written when the query
// creates the table, and compared with the config whenever a query starts. A table from
// before the property adopts the definition of the first run that finds it without one.
const PropDefinition = "medallion.definition"

// definition is a canonical, readable form of what a table's state depends on: field by
// field, so that a refusal can say which field changed.
type definition map[string]string

func (d definition) props() map[string]string {
	b, _ := json.Marshal(map[string]string(d)) // sorted keys: canonical
	return map[string]string{PropDefinition: string(b)}
}

// silverDefinition is what the dedup state is keyed by, and the expression of each computed
// column (transform.columns) silver holds: a computed column's rows already written cannot
// follow a changed expression (key computedPrefix + name).
func silverDefinition(q *spec.Query) definition {
	d := definition{"dedup": strings.Join(q.Dedup, ", "), "event_time": q.Rules.EventTime}
	for _, c := range q.Rules.Transform.Columns {
		d[computedPrefix+c.Name] = strings.TrimSpace(c.Expr)
	}
	return d
}

// computedPrefix starts the definition keys of computed columns. A key the recorded definition
// lacks is a column added since (as an added column, allowed: the rows before it hold NULL), a
// recorded key the config lacks a computed column removed (the column stays, as a removed
// declared column does); a changed value is refused.
const computedPrefix = "computed column "

// goldDefinition is what an aggregation's state and gold rows depend on. eventTime is the
// query's event time, which an aggregation without a TimeColumn uses.
func goldDefinition(g *spec.Aggregation, eventTime string) definition {
	var w string
	switch {
	case g.Window.Session:
		w = "session gap " + g.Window.Gap.String()
	case g.Window.Slide != 0 && g.Window.Slide != g.Window.Size:
		w = "sliding size " + g.Window.Size.String() + " slide " + g.Window.Slide.String()
	default:
		w = "tumbling size " + g.Window.Size.String()
	}
	if g.Window.Start != 0 {
		w += " start " + g.Window.Start.String()
	}
	aggs := make([]string, len(g.Aggregates))
	for i, a := range g.Aggregates {
		col := a.Column
		if col == "" {
			col = "*"
		}
		s := a.Fn + "(" + col
		for _, p := range a.Percentiles {
			s += ", " + strconv.FormatFloat(p, 'g', -1, 64)
		}
		if a.RelativeAccuracy != 0 {
			s += ", accuracy " + strconv.FormatFloat(a.RelativeAccuracy, 'g', -1, 64)
		}
		if a.RSD != 0 {
			s += ", rsd " + strconv.FormatFloat(a.RSD, 'g', -1, 64)
		}
		aggs[i] = s + ") as " + a.As
	}
	mode := g.OutputMode
	if mode == "" {
		mode = spec.OutputAppend
	}
	tc := g.TimeColumn
	if tc == "" {
		tc = eventTime
	}
	return definition{"window": w, "time_column": tc, "group_by": strings.Join(g.GroupBy, ", "),
		"aggregates": strings.Join(aggs, ", "), "output_mode": mode}
}

// joinDefinition is what a join's state and joined rows depend on.
func joinDefinition(j *spec.Join) definition {
	on := make([]string, len(j.On))
	for i, k := range j.On {
		on[i] = "left." + k.Left + " = right." + k.Right
	}
	return definition{"type": j.Type, "left": j.Left.Source, "right": j.Right.Source, "on": strings.Join(on, " AND "),
		"time": fmt.Sprintf("right.%s BETWEEN left.%s + %s AND left.%s + %s", j.Right.EventTime, j.Left.EventTime, j.Lower, j.Left.EventTime, j.Upper)}
}

// definedTable is a table whose definition a query checks at start.
type definedTable struct {
	t    *table.Table
	path string
	what string // "gold events_5m", "join ec", "silver (dedup)"
	def  definition
	// wayOut says how to go on with the new definition, for the error.
	wayOut string
}

// checkDefinitions compares each existing table's recorded definition with the config's and
// refuses a change with ErrDefinitionChanged naming the fields, the old and the new values
// and the ways out. A table without the property (created before it existed) adopts the
// config's definition: the property is written once (a metaData commit, idempotent).
func checkDefinitions(ctx context.Context, ts []definedTable) error {
	for _, d := range ts {
		snap, err := d.t.Log().Snapshot(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			continue // created with the property when the query first writes
		}
		if err != nil {
			return fmt.Errorf("stream: open table %s: %w", d.path, err)
		}
		raw, ok := snap.Metadata().Configuration[PropDefinition]
		if !ok {
			if _, err := d.t.Evolve(ctx, nil, d.def.props()); err != nil {
				return fmt.Errorf("stream: record the definition of %s in table %s: %w", d.what, d.path, err)
			}
			continue
		}
		var old definition
		if err := json.Unmarshal([]byte(raw), &old); err != nil {
			return fmt.Errorf("stream: table %s: property %s is not a definition (%v); restore it or remove it to adopt the config's", d.path, PropDefinition, err)
		}
		var changes []string
		keys := make([]string, 0, len(d.def))
		for k := range d.def {
			keys = append(keys, k)
		}
		for k := range old {
			if _, ok := d.def[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		grown := false // computed columns added or removed since the recorded definition
		for _, k := range keys {
			o, had := old[k]
			n, has := d.def[k]
			if strings.HasPrefix(k, computedPrefix) && had != has {
				grown = true
				continue
			}
			if o != n {
				changes = append(changes, fmt.Sprintf("%s was %q, is now %q", k, o, n))
			}
		}
		if len(changes) == 0 && grown {
			// Record the new set, so that a later change of an added expression is refused. A
			// removed computed column stays recorded, as its column stays in the table: adding
			// it back under another expression is a changed expression.
			rec := maps.Clone(d.def)
			for k, o := range old {
				if _, ok := rec[k]; !ok && strings.HasPrefix(k, computedPrefix) {
					rec[k] = o
				}
			}
			if _, err := d.t.Evolve(ctx, nil, rec.props()); err != nil {
				return fmt.Errorf("stream: record the definition of %s in table %s: %w", d.what, d.path, err)
			}
			continue
		}
		if len(changes) > 0 {
			return fmt.Errorf("%w: %s: table %s was written under another definition: %s. "+
				"Its state and rows cannot be carried over to the new one. Ways out: put the old definition back, or %s. "+
				"See docs/schema-evolution.md",
				ErrDefinitionChanged, d.what, d.path, strings.Join(changes, "; "), d.wayOut)
		}
	}
	return nil
}

// definedTables are the tables of a query whose definitions checkDefinitions compares.
func queryDefinedTables(q *spec.Query, silverT *table.Table, golds []*table.Table) []definedTable {
	refresh := fmt.Sprintf("do a full refresh of query %s: delete its silver table %s, its quarantine and gold tables and the query's "+
		"files in its checkpoint %s (metadata, offsets/, commits/, state/, progress/; keep ingest/, which is ingest's), "+
		"then run the stream again: it rebuilds them from bronze", q.Name, q.Tables.Silver, q.Tables.Checkpoint)
	ts := []definedTable{silverDefinedTable(q, silverT, refresh)}
	for i := range q.Gold {
		g := &q.Gold[i]
		way := fmt.Sprintf("stop the stream and run `medallion run refresh --table %s`: it rebuilds the table and the stream's state of it "+
			"from silver under the new definition (docs/derived-tables.md)", g.Name)
		ts = append(ts, definedTable{t: golds[i], path: g.Table, what: "gold " + g.Name, def: goldDefinition(g, q.Rules.EventTime), wayOut: way})
	}
	return ts
}

func silverDefinedTable(q *spec.Query, silverT *table.Table, refresh string) definedTable {
	return definedTable{t: silverT, path: q.Tables.Silver, what: "silver of query " + q.Name + " (dedup and event time)", def: silverDefinition(q), wayOut: refresh}
}

// CheckSilverDefinition is the check a query makes of silver's definition when it starts (the
// dedup, the event time and each computed column's expression), for a job that rewrites
// silver's rows outside the stream (backfill-columns recomputes the computed columns): a
// changed definition is refused with ErrDefinitionChanged, so that no job mixes two meanings
// of a column; computed columns added since are recorded, as the query records them.
func CheckSilverDefinition(ctx context.Context, q *spec.Query, silverT *table.Table) error {
	refresh := queryDefinedTables(q, silverT, make([]*table.Table, len(q.Gold)))[0].wayOut
	return checkDefinitions(ctx, []definedTable{silverDefinedTable(q, silverT, refresh)})
}

// joinDefinedTables are the tables of a join query whose definitions checkDefinitions compares.
func joinDefinedTables(j *spec.Join, out *table.Table, golds []*table.Table) []definedTable {
	wayOut := fmt.Sprintf("give the join a new name with new tables and checkpoint, or do a full refresh of join %s: delete %s, %s, "+
		"the join's gold and quarantine tables and its checkpoint %s, then run it again: it joins both silver tables from the start",
		j.Name, j.Table, j.Quarantine, j.Checkpoint)
	ts := []definedTable{{t: out, path: j.Table, what: "join " + j.Name, def: joinDefinition(j), wayOut: wayOut}}
	for i := range j.Gold {
		g := &j.Gold[i]
		way := fmt.Sprintf("stop the stream and run `medallion run refresh --table %s`: it rebuilds the table and the stream's state of it "+
			"from the joined table %s under the new definition (docs/derived-tables.md)", g.Name, j.Table)
		ts = append(ts, definedTable{t: golds[i], path: g.Table, what: "gold " + g.Name + " over join " + j.Name, def: goldDefinition(g, ""), wayOut: way})
	}
	return ts
}
