package config

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/txlog"
)

// Source is one landing -> bronze -> silver chain with its own streaming query (DESIGN.md §8
// `sources:`). The top-level landing, schema, tables, stream and expectations form the source
// named stream.name; AllSources lists it first.
type Source struct {
	// Name names the source (--source NAME, joins[].left/right, gold[].source, the query's
	// progress). Required; unique across sources and joins; letters, digits, '_' and '-'.
	Name string `yaml:"name"`
	// Landing is where this source's raw events arrive. Default path "landing/<name>/".
	Landing Landing `yaml:"landing"`
	// Schema is this source's event schema. Required, at least one column.
	Schema []Column `yaml:"schema"`
	// Tables default to bronze/<name>, silver/<name> and the shared bronze/rejects.
	Tables Tables `yaml:"tables"`
	// SchemaEvolution defaults to the top-level schema_evolution, key by key.
	SchemaEvolution SchemaEvolution `yaml:"schema_evolution"`
	// Stream is this source's query; its name is the source's name (stream.name must not be
	// set to anything else), its checkpoint defaults to _checkpoints/<name> and its trigger to
	// the top-level stream.trigger.
	Stream Stream `yaml:"stream"`
	// Expectations are data-quality constraints on this source's rows. Optional.
	Expectations []Expectation `yaml:"expectations,omitempty"`
	// Transform computes columns and filters rows of this source (docs/transforms.md). Optional.
	Transform Transform `yaml:"transform,omitempty"`
}

// Join is a stream-stream join of two sources (DESIGN.md §8 `joins:`), its own query reading
// both sources' silver tables.
type Join struct {
	// Name names the join (--source NAME, gold[].source, progress). Required; unique across
	// sources and joins.
	Name string `yaml:"name"`
	// Left and Right name sources (the top-level stream's name counts). Required.
	Left  string `yaml:"left"`
	Right string `yaml:"right"`
	// Type is inner (default), left_outer, right_outer, full_outer or left_semi.
	Type string `yaml:"type"`
	// On are the equi-join key pairs. Required, at least one (Spark needs an equality).
	On []JoinOn `yaml:"on"`
	// Time is the time-range condition:
	// right.time BETWEEN left.time + lower AND left.time + upper.
	Time JoinTime `yaml:"time"`
	// Table is the joined table. Default "silver/" + Name.
	Table string `yaml:"table"`
	// Quarantine holds the input rows judged late. Default "silver/late_" + Name.
	Quarantine string `yaml:"quarantine"`
	// Checkpoint is the join query's checkpoint prefix. Default "_checkpoints/" + Name.
	Checkpoint string `yaml:"checkpoint"`
	// ChangeDataFeed creates the joined table with delta.enableChangeDataFeed (default
	// true): merge-late then writes its change rows. Only at creation, as for gold.
	ChangeDataFeed *bool `yaml:"change_data_feed,omitempty"`
}

// ChangeFeed is change_data_feed with its default (true).
func (j *Join) ChangeFeed() bool { return j.ChangeDataFeed == nil || *j.ChangeDataFeed }

// JoinOn is one equality of a join: left.Left = right.Right.
type JoinOn struct {
	Left  string `yaml:"left"`
	Right string `yaml:"right"`
}

// JoinTime is a join's time-range condition.
type JoinTime struct {
	// Left and Right are the sources' event-time columns (the default; anything else is an
	// error: Spark evicts by the watermarked column).
	Left  string `yaml:"left"`
	Right string `yaml:"right"`
	// Lower and Upper bound right.time - left.time, both inclusive. Required; may be negative;
	// lower <= upper.
	Lower Duration `yaml:"lower"`
	Upper Duration `yaml:"upper"`
}

// Join types as the config names them (join.ParseType reads the same names).
const (
	JoinInner      = "inner"
	JoinLeftOuter  = "left_outer"
	JoinRightOuter = "right_outer"
	JoinFullOuter  = "full_outer"
	JoinLeftSemi   = "left_semi"
	// JoinLeftAnti and JoinCross parse, so that the Spark check (jobs/specs.Check) answers them
	// with Spark's own text.
	JoinLeftAnti = "left_anti"
	JoinCross    = "cross"
)

// JoinColumns are the joined table's columns of j, named as DESIGN.md §8 says (and join.Output
// does; jobs/specs checks that they agree): the left source's silver columns, then the
// right's, a right column whose name is taken prefixed with the right source's name and "_";
// left_semi keeps the left columns. ok is false when a source or a column type is unknown, or
// a renamed column collides again.
func (p *Pipeline) JoinColumns(j Join) (cols []Column, ok bool) {
	l, lok := p.SourceByName(j.Left)
	r, rok := p.SourceByName(j.Right)
	if !lok || !rok {
		return nil, false
	}
	left, right := l.silverColumns(), r.silverColumns()
	if left == nil || right == nil {
		return nil, false
	}
	taken := map[string]bool{}
	for _, c := range left {
		taken[c.Name] = true
		cols = append(cols, c)
	}
	if j.Type == JoinLeftSemi {
		return cols, true
	}
	for _, c := range right {
		if taken[c.Name] {
			c.Name = j.Right + "_" + c.Name
			if taken[c.Name] {
				return nil, false
			}
		}
		taken[c.Name] = true
		cols = append(cols, c)
	}
	return cols, true
}

// silverColumns are the source's silver columns with their config types: the declared ones,
// then bronze's metadata columns (and the Kafka ones for a kafka landing); nil when a declared
// type is invalid.
func (s Source) silverColumns() []Column {
	st := s.SilverSchema()
	if st == nil {
		return nil
	}
	out := make([]Column, 0, len(st.Fields))
	for i, f := range st.Fields {
		if i < len(s.Schema) {
			out = append(out, Column{Name: f.Name, Type: s.Schema[i].Type})
			continue
		}
		out = append(out, Column{Name: f.Name, Type: metaColumnType(f.Type)})
	}
	return out
}

func (p *Pipeline) defaultSources() {
	for i := range p.Sources {
		s := &p.Sources[i]
		defaultExpectations(s.Expectations)
		defaultTransform(&s.Transform)
		name := s.Name
		if name == "" {
			name = fmt.Sprintf("source%d", i) // only reached with an error reported on name
		}
		defaultLanding(&s.Landing, "landing/"+name+"/")
		defaultTables(&s.Tables, "bronze/"+name, "silver/"+name)
		if s.SchemaEvolution.TypeWidening == nil && p.SchemaEvolution.TypeWidening != nil {
			setBool(&s.SchemaEvolution.TypeWidening, *p.SchemaEvolution.TypeWidening)
		}
		setStr(&s.Stream.Name, s.Name)
		if s.Stream.Name != "" {
			defaultStream(&s.Stream, p.Stream.Trigger)
		}
	}
}

func (p *Pipeline) defaultJoins() {
	for i := range p.Joins {
		j := &p.Joins[i]
		setStr(&j.Type, JoinInner)
		if j.Name != "" {
			setStr(&j.Table, "silver/"+j.Name)
			setStr(&j.Quarantine, "silver/late_"+j.Name)
			setStr(&j.Checkpoint, "_checkpoints/"+j.Name)
		}
		if l, ok := p.SourceByName(j.Left); ok {
			setStr(&j.Time.Left, l.Stream.EventTime)
		}
		if r, ok := p.SourceByName(j.Right); ok {
			setStr(&j.Time.Right, r.Stream.EventTime)
		}
	}
}

// AllSources lists every source: the top-level one (named stream.name) first, then sources:.
// The values are copies: change the config through its fields.
func (p *Pipeline) AllSources() []Source {
	out := make([]Source, 0, 1+len(p.Sources))
	out = append(out, Source{Name: p.Stream.Name, Landing: p.Landing, Schema: p.Schema, Tables: p.Tables,
		SchemaEvolution: p.SchemaEvolution, Stream: p.Stream, Expectations: p.Expectations, Transform: p.Transform})
	return append(out, p.Sources...)
}

// MultiSource reports whether the config uses sources: or joins: (the single-source form
// otherwise).
func (p *Pipeline) MultiSource() bool { return len(p.Sources) > 0 || len(p.Joins) > 0 }

// SourceByName finds a source (the top-level one included) by name.
func (p *Pipeline) SourceByName(name string) (Source, bool) {
	if name == "" {
		return Source{}, false
	}
	for _, s := range p.AllSources() {
		if s.Name == name {
			return s, true
		}
	}
	return Source{}, false
}

// JoinByName finds a join by name.
func (p *Pipeline) JoinByName(name string) (*Join, bool) {
	for i := range p.Joins {
		if p.Joins[i].Name == name {
			return &p.Joins[i], true
		}
	}
	return nil, false
}

// GoldSource is the name of g's input: g.Source, or the top-level stream's name.
func (p *Pipeline) GoldSource(g Gold) string {
	if g.Source != "" {
		return g.Source
	}
	return p.Stream.Name
}

// GoldTimeColumn is the column g's windows are over: g.TimeColumn, else the input source's
// event time (a derived table: DerivedTimeColumn), else (a join) the left source's event-time column as the joined table names it.
func (p *Pipeline) GoldTimeColumn(g Gold) string {
	if g.TimeColumn != "" {
		return g.TimeColumn
	}
	if p.IsDerived(g) {
		return DerivedTimeColumn
	}
	name := p.GoldSource(g)
	if s, ok := p.SourceByName(name); ok {
		return s.Stream.EventTime
	}
	if j, ok := p.JoinByName(name); ok {
		// Left columns keep their names in the joined table.
		if l, ok := p.SourceByName(j.Left); ok {
			return l.Stream.EventTime
		}
	}
	return ""
}

// GoldOf lists the aggregations whose input is the source or join named name.
func (p *Pipeline) GoldOf(name string) []Gold {
	var out []Gold
	for _, g := range p.Gold {
		if p.GoldSource(g) == name {
			out = append(out, g)
		}
	}
	return out
}

// ForSource is the single-source view of the source named name: the pipeline with that
// source's landing, schema, tables, stream and expectations at the top level, only the gold
// aggregations over it, and no sources or joins. Every job written for one source runs on it
// unchanged. The view is for reading: it is not re-validated and Override does not apply to it.
func (p *Pipeline) ForSource(name string) (*Pipeline, bool) {
	s, ok := p.SourceByName(name)
	if !ok {
		return nil, false
	}
	v := *p
	v.Landing, v.Schema, v.Tables, v.Stream, v.Expectations = s.Landing, s.Schema, s.Tables, s.Stream, s.Expectations
	v.Transform = s.Transform
	v.SchemaEvolution = s.SchemaEvolution
	v.joinPins = p.joinPinned(name)
	v.Sources, v.Joins = nil, nil
	v.Gold = p.GoldOf(name)
	return &v, true
}

// SilverSchema is the silver table's schema of a source as its config declares it: the declared
// columns, then bronze's metadata columns (and the Kafka ones for a kafka landing), as bronze
// writes them, then the transform's computed columns. Nil when a column type is invalid; the
// computed columns are left out when one of them does not type (validation says why).
func (s Source) SilverSchema() *txlog.StructType {
	st := s.BronzeSchema()
	if st == nil || len(s.Transform.Columns) == 0 {
		return st
	}
	computed, err := s.Transform.ComputedSchema(context.Background(), st)
	if err != nil {
		return st
	}
	st.Fields = append(st.Fields, computed...)
	return st
}

// BronzeSchema is the bronze table's schema of a source as its config declares it: the declared
// columns, then bronze's metadata columns (and the Kafka ones for a kafka landing). Nil when a
// column type is invalid.
func (s Source) BronzeSchema() *txlog.StructType {
	st := &txlog.StructType{}
	for _, c := range s.Schema {
		if c.Type.Err() != nil || c.Type.Kind == "" {
			return nil
		}
		st.Fields = append(st.Fields, txlog.StructField{Name: c.Name, Type: c.Type.deltaType(), Nullable: true})
	}
	meta := []txlog.DataType{txlog.PrimitiveType{Name: txlog.TypeString}, txlog.PrimitiveType{Name: txlog.TypeTimestamp},
		txlog.PrimitiveType{Name: txlog.TypeString}, txlog.PrimitiveType{Name: txlog.TypeLong}}
	for i, name := range bronzeColumns {
		st.Fields = append(st.Fields, txlog.StructField{Name: name, Type: meta[i], Nullable: true})
	}
	if s.Landing.Kind == LandingKafka {
		kmeta := []txlog.DataType{txlog.PrimitiveType{Name: txlog.TypeString}, txlog.PrimitiveType{Name: txlog.TypeInteger},
			txlog.PrimitiveType{Name: txlog.TypeLong}, txlog.PrimitiveType{Name: txlog.TypeTimestamp},
			txlog.PrimitiveType{Name: txlog.TypeBinary}}
		for i, name := range kafkaColumns {
			st.Fields = append(st.Fields, txlog.StructField{Name: name, Type: kmeta[i], Nullable: true})
		}
	}
	return st
}

func (t ColumnType) deltaType() txlog.DataType {
	if t.Kind == KindDecimal {
		return txlog.DecimalType{Precision: t.Precision, Scale: t.Scale}
	}
	return txlog.PrimitiveType{Name: string(t.Kind)}
}

// PinnedColumns are the columns of the pipeline's (top-level, or in a ForSource view its one)
// source whose values a stateful definition keeps: the event time, the dedup keys, the group_by,
// aggregate and time columns of the gold aggregations over it, and the keys and time columns of
// the joins that read it; each with what uses it. A query's state holds them encoded at the
// column's type, so schema_evolution.type_widening does not widen them in place.
func (p *Pipeline) PinnedColumns() map[string]string {
	out := map[string]string{}
	add := func(col, what string) {
		if _, ok := out[col]; col != "" && !ok {
			out[col] = what
		}
	}
	add(p.Stream.EventTime, "the event time (stream.event_time)")
	for _, d := range p.Stream.Dedup {
		add(d, "a dedup key (stream.dedup)")
	}
	name := p.Stream.Name
	for _, g := range p.Gold {
		if p.GoldSource(g) != name {
			continue
		}
		for _, c := range g.GroupBy {
			add(c, "in group_by of gold "+g.Name)
		}
		for _, a := range g.Aggregates {
			add(a.Column, "aggregated by "+a.As+" of gold "+g.Name)
		}
		add(p.GoldTimeColumn(g), "the time column of gold "+g.Name)
	}
	for c, what := range p.joinPinned(name) {
		add(c, what)
	}
	for c, what := range p.joinPins {
		add(c, what)
	}
	return out
}

// joinPinned are the columns of source name that the joins reading it use.
func (p *Pipeline) joinPinned(name string) map[string]string {
	out := map[string]string{}
	for _, j := range p.Joins {
		if j.Left == name {
			for _, on := range j.On {
				out[on.Left] = "a key of join " + j.Name
			}
			out[j.Time.Left] = "the time column of join " + j.Name
		}
		if j.Right == name {
			for _, on := range j.On {
				out[on.Right] = "a key of join " + j.Name
			}
			out[j.Time.Right] = "the time column of join " + j.Name
		}
	}
	delete(out, "")
	return out
}
