package silver

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// Action is what a violated expectation does to its row.
type Action string

// Expectation actions (DESIGN.md §4).
const (
	// Warn keeps the row and counts the violation.
	Warn Action = "warn"
	// Drop moves the row to rejects (stage validate, reason expectation:<name>).
	Drop Action = "drop"
	// Fail stops the batch before any table write: the job fails naming the expectation and
	// one violating row.
	Fail Action = "fail"
)

// ReasonExpectationPrefix starts the rejects reason of a row an expectation dropped.
const ReasonExpectationPrefix = "expectation:"

// MaxExpectations bounds the expectations of one source (a row's violations are a bit set).
const MaxExpectations = 64

// Expectation is a named data-quality constraint: a Spark SQL boolean expression (sqlexpr.ParseSQL)
// that every row should satisfy. A NULL result is a violation.
type Expectation struct {
	Name        string
	Expect      string
	OnViolation Action
}

// maxErrorRow bounds the violating row an ExpectationError carries (it is printed on one line).
const maxErrorRow = 4096

// ErrExpectationFailed is the error of a batch stopped by an expectation with action fail;
// errors.As gives the *ExpectationError.
var ErrExpectationFailed = errors.New("expectation failed")

// ExpectationError names the expectation that failed a batch and the first violating row.
type ExpectationError struct {
	Name, Expect string
	// Violations counts the batch's violating rows.
	Violations int64
	// Row is the first violating row as JSON; SourceFile and SourceOffset say where it came
	// from (as rejects do).
	Row          string
	SourceFile   string
	SourceOffset int64
}

func (e *ExpectationError) Error() string {
	return fmt.Sprintf("expectation %q (%s, on_violation: fail) is violated by %d row(s) of the batch, which committed nothing; first violating row (%s offset %d): %s",
		e.Name, e.Expect, e.Violations, e.SourceFile, e.SourceOffset, e.Row)
}

// Unwrap makes errors.Is(err, ErrExpectationFailed) true.
func (e *ExpectationError) Unwrap() error { return ErrExpectationFailed }

// ExpectationCount is one expectation's outcome over the rows it judged (the rows that passed
// the other validation rules): Passed + Failed rows; Dropped of the failed went to rejects.
type ExpectationCount struct {
	Name        string
	OnViolation Action
	Passed      int64
	Failed      int64
	Dropped     int64
}

// ParseExpectation parses e.Expect; the error names the expectation and the position.
func ParseExpectation(e Expectation) (sqlexpr.Expr, error) {
	return parseExpectation(context.Background(), e)
}

func parseExpectation(ctx context.Context, e Expectation) (sqlexpr.Expr, error) {
	x, err := sqlexpr.ParseSQLContext(ctx, e.Expect)
	if err != nil {
		return nil, fmt.Errorf("expectation %q: %w", e.Name, err)
	}
	return x, nil
}

// Expectations evaluates a source's expectations over its batches. The programs are compiled
// once per schema; evaluation is column by column (sqlexpr.Program). Not safe for concurrent use.
type Expectations struct {
	list   []Expectation
	exprs  []sqlexpr.Expr
	schema *txlog.StructType
	progs  []*sqlexpr.Program
	counts []ExpectationCount
}

// NewExpectations parses every expectation.
func NewExpectations(list []Expectation) (*Expectations, error) {
	return NewExpectationsContext(context.Background(), list)
}

// NewExpectationsContext is NewExpectations that stops with ctx's error when ctx ends: the
// parser checks it as it goes (a config's expectations, already parsed once at load, are
// parsed again here, in time linear in their text).
func NewExpectationsContext(ctx context.Context, list []Expectation) (*Expectations, error) {
	if len(list) > MaxExpectations {
		return nil, fmt.Errorf("silver: %d expectations: at most %d per source", len(list), MaxExpectations)
	}
	x := &Expectations{list: list}
	for _, e := range list {
		switch e.OnViolation {
		case Warn, Drop, Fail:
		default:
			return nil, fmt.Errorf("expectation %q: on_violation %q: expected warn, drop or fail", e.Name, e.OnViolation)
		}
		ex, err := parseExpectation(ctx, e)
		if err != nil {
			return nil, err
		}
		x.exprs = append(x.exprs, ex)
	}
	x.reset()
	return x, nil
}

func (x *Expectations) reset() {
	x.counts = make([]ExpectationCount, len(x.list))
	for i, e := range x.list {
		x.counts[i] = ExpectationCount{Name: e.Name, OnViolation: e.OnViolation}
	}
}

// Columns lists the top-level columns the expectations read, as written in them.
func (x *Expectations) Columns() []string {
	var out []string
	for _, e := range x.exprs {
		out = append(out, sqlexpr.SQLColumns(e)...)
	}
	return out
}

// OnlyDrop keeps the drop expectations: the ones that decide which rows reach silver.
func OnlyDrop(list []Expectation) []Expectation {
	var out []Expectation
	for _, e := range list {
		if e.OnViolation == Drop {
			out = append(out, e)
		}
	}
	return out
}

// Len is the number of expectations.
func (x *Expectations) Len() int { return len(x.list) }

// Compile binds every expectation to schema (column names, Spark's types); the error names
// the expectation.
func (x *Expectations) Compile(schema *txlog.StructType) error {
	// Batches of one table usually share a schema value; an equal one keeps the programs
	// (and their buffers) too.
	if x.progs != nil && (x.schema == schema || reflect.DeepEqual(x.schema, schema)) {
		return nil
	}
	progs := make([]*sqlexpr.Program, len(x.exprs))
	for i, e := range x.exprs {
		p, err := sqlexpr.CompileSQL(e, schema)
		if err != nil {
			return fmt.Errorf("expectation %q: %w", x.list[i].Name, err)
		}
		progs[i] = p
	}
	x.schema, x.progs = schema, progs
	return nil
}

// TakeCounts returns the counts since the last call, and starts new ones.
func (x *Expectations) TakeCounts() []ExpectationCount {
	c := x.counts
	x.reset()
	return c
}

// Apply evaluates the expectations over b with current_timestamp() = now (the batch
// timestamp, so that a rerun decides the same), on the rows the other rules of c keep. A row
// that violates a drop expectation is rejected by c.Reject afterwards; a violated fail
// expectation returns an *ExpectationError and the batch must write nothing.
func (x *Expectations) Apply(c *Check, b *pq.Batch, now time.Time) error {
	if len(x.list) == 0 {
		return nil
	}
	if err := x.Compile(b.Schema); err != nil {
		return err
	}
	n := b.Len()
	judged := make([]bool, n)
	for i := range n {
		judged[i] = c.baseReject(i) == ""
	}
	c.violated = make([]uint64, n)
	c.drop = make([]bool, n)
	c.expect = x
	var failure *ExpectationError
	for k, p := range x.progs {
		val, null := p.Eval(b, now)
		cnt := &x.counts[k]
		act := x.list[k].OnViolation
		bit := uint64(1) << k
		for i := range n {
			if !judged[i] {
				continue
			}
			if val[i] && (null == nil || !null[i]) {
				cnt.Passed++
				continue
			}
			cnt.Failed++
			c.violated[i] |= bit
			switch act {
			case Drop:
				cnt.Dropped++
				c.drop[i] = true
			case Fail:
				if failure == nil {
					row := pq.AppendJSONRow(nil, b, i)
					if len(row) > maxErrorRow {
						row = append(row[:maxErrorRow], "…"...)
					}
					failure = &ExpectationError{Name: x.list[k].Name, Expect: x.list[k].Expect,
						Row: string(row), SourceOffset: -1}
					if sf := b.Column(bronze.ColSourceFile); sf != nil && !sf.IsNull(i) {
						failure.SourceFile = sf.StringAt(i)
					}
					if so := b.Column(bronze.ColSourceOffset); so != nil && !so.IsNull(i) {
						failure.SourceOffset = so.Int64[i]
					}
				}
				if failure.Name == x.list[k].Name {
					failure.Violations++
				}
			}
		}
	}
	if failure != nil {
		return failure
	}
	return nil
}

// reason is the rejects reason of a dropped row: the first drop expectation it violates.
func (x *Expectations) reason(violated uint64) string {
	for k, e := range x.list {
		if violated&(1<<k) != 0 && e.OnViolation == Drop {
			return ReasonExpectationPrefix + e.Name
		}
	}
	return ""
}

// detail names every expectation the row violates, in order, with its action.
func (x *Expectations) detail(violated uint64) string {
	var parts []string
	for k, e := range x.list {
		if violated&(1<<k) != 0 {
			parts = append(parts, fmt.Sprintf("%s (%s): %s is false or NULL", e.Name, e.OnViolation, e.Expect))
		}
	}
	return "violated expectations: " + strings.Join(parts, "; ")
}
