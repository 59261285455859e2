package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrNoExpectations reports a check over a pipeline that declares no expectation.
var ErrNoExpectations = errors.New("report: the config has no expectations")

// CheckOptions select the rows `medallion check` judges.
type CheckOptions struct {
	// From and To bound the event time, [From, To); zero leaves that side open.
	From, To time.Time
	// Bronze judges the bronze table (the rows that pass the required-column, event-time and
	// future rules, as the stream would) instead of silver.
	Bronze bool
	// Now is current_timestamp() in the expressions.
	Now time.Time
	// Samples is how many violating rows to keep per expectation (default 3).
	Samples int
}

// withDefaults returns o with every unset field at its default.
func (o CheckOptions) withDefaults() CheckOptions {
	if o.Samples <= 0 {
		o.Samples = 3
	}
	return o
}

// CheckReport is what the config's expectations say about rows already in the lake.
type CheckReport struct {
	Table        string               `json:"table"`
	From         *time.Time           `json:"from,omitempty"`
	To           *time.Time           `json:"to,omitempty"`
	Rows         int64                `json:"rows"`
	Expectations []ExpectationVerdict `json:"expectations"`
	// WouldFail is true when a fail expectation is violated: a stream batch with these rows
	// would have stopped.
	WouldFail bool `json:"wouldFail"`
}

// ExpectationVerdict is one expectation over the checked rows.
type ExpectationVerdict struct {
	Name        string   `json:"name"`
	Expect      string   `json:"expect"`
	OnViolation string   `json:"onViolation"`
	Passed      int64    `json:"passed"`
	Failed      int64    `json:"failed"`
	Samples     []string `json:"samples,omitempty"` // violating rows as JSON
}

// Check evaluates the config's expectations over silver (or bronze) rows in the event-time
// range. It reads only: nothing in the lake changes.
func Check(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline, opts CheckOptions) (*CheckReport, error) {
	if len(cfg.Expectations) == 0 {
		return nil, ErrNoExpectations
	}
	if !opts.From.IsZero() && !opts.To.IsZero() && !opts.To.After(opts.From) {
		return nil, fmt.Errorf("%w: --to %s is not after --from %s", ErrBadRange,
			opts.To.UTC().Format(time.RFC3339), opts.From.UTC().Format(time.RFC3339))
	}
	opts = opts.withDefaults()
	var list []silver.Expectation
	for _, e := range cfg.Expectations {
		// Every row is judged and counted here, whatever its action: fail only names rows.
		list = append(list, silver.Expectation{Name: e.Name, Expect: e.Expect, OnViolation: silver.Warn})
	}
	x, err := silver.NewExpectationsContext(ctx, list)
	if err != nil {
		return nil, err
	}
	rules := silver.Rules{EventTime: cfg.Stream.EventTime}
	if opts.Bronze {
		rules.MaxFutureSkew = cfg.Stream.MaxFutureSkew.Duration
		for _, c := range cfg.Schema {
			if c.Required {
				rules.Required = append(rules.Required, c.Name)
			}
		}
	}
	path := cfg.Tables.Silver
	if opts.Bronze {
		path = cfg.Tables.Bronze
	}
	rep := &CheckReport{Table: path}
	if !opts.From.IsZero() {
		rep.From = &opts.From
	}
	if !opts.To.IsZero() {
		rep.To = &opts.To
	}
	for _, e := range cfg.Expectations {
		rep.Expectations = append(rep.Expectations, ExpectationVerdict{Name: e.Name, Expect: e.Expect, OnViolation: e.OnViolation})
	}
	t := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	filter := rangeFilter(cfg.Stream.EventTime, LagOptions{From: opts.From, To: opts.To})
	var tr *checkTransform
	if opts.Bronze && !cfg.Transform.IsZero() {
		if tr, err = newCheckTransform(ctx, t, cfg, opts); err != nil {
			return nil, err
		}
		if tr.computedTime {
			filter = nil // the event time is not in bronze: the range is checked row by row
		}
	}
	for b, err := range t.Scan(ctx, table.ScanOptions{Filter: filter}) {
		if errors.Is(err, txlog.ErrTableNotFound) {
			return nil, fmt.Errorf("report: %s does not exist yet: %w", path, err)
		}
		if err != nil {
			return nil, fmt.Errorf("report: scan %s: %w", path, err)
		}
		if tr != nil {
			if b, err = tr.x.Apply(b, opts.Now); err != nil {
				return nil, fmt.Errorf("report: %s: %w", path, err)
			}
			if b, err = tr.keepRange(b); err != nil {
				return nil, fmt.Errorf("report: %s: %w", path, err)
			}
		}
		c := rules.Bind(b)
		if err := x.Apply(&c, b, opts.Now); err != nil {
			return nil, fmt.Errorf("report: %s: %w", path, err)
		}
		for i := range b.Len() {
			if !c.Judged(i) {
				continue
			}
			rep.Rows++
			for k := range rep.Expectations {
				v := &rep.Expectations[k]
				if c.ViolatedExpectation(i, k) && len(v.Samples) < opts.Samples {
					v.Samples = append(v.Samples, string(pq.AppendJSONRow(nil, b, i)))
				}
			}
		}
		for k, n := range x.TakeCounts() {
			rep.Expectations[k].Passed += n.Passed
			rep.Expectations[k].Failed += n.Failed
		}
	}
	for _, v := range rep.Expectations {
		if v.OnViolation == config.OnViolationFail && v.Failed > 0 {
			rep.WouldFail = true
		}
	}
	return rep, nil
}

// WriteText prints the verdicts as a table, then sample violating rows.
func (r *CheckReport) WriteText(w io.Writer) error {
	span := "all event times"
	if r.From != nil || r.To != nil {
		f, t := "-", "-"
		if r.From != nil {
			f = r.From.UTC().Format(time.RFC3339)
		}
		if r.To != nil {
			t = r.To.UTC().Format(time.RFC3339)
		}
		span = "event time " + f + " to " + t
	}
	fmt.Fprintf(w, "checked %d rows of %s (%s)\n\n", r.Rows, r.Table, span)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "expectation\ton_violation\tpassed\tfailed\twould\t")
	for _, v := range r.Expectations {
		would := "-"
		if v.Failed > 0 {
			switch v.OnViolation {
			case config.OnViolationDrop:
				would = fmt.Sprintf("drop %d", v.Failed)
			case config.OnViolationFail:
				would = "FAIL the batch"
			default:
				would = fmt.Sprintf("warn %d", v.Failed)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t\n", v.Name, v.OnViolation, v.Passed, v.Failed, would)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range r.Expectations {
		if len(v.Samples) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s) is false or NULL for:\n", v.Name, v.Expect)
		for _, s := range v.Samples {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	return nil
}

// checkTransform gives bronze rows, for check --bronze, the transform's computed columns, so
// that a computed event time is judged as the stream judges it.
type checkTransform struct {
	x            *silver.Transformer
	computedTime bool // the event time is a computed column: the scan cannot filter on it
	ev           string
	from, to     int64 // microseconds; 0: unbounded
}

func newCheckTransform(ctx context.Context, t *table.Table, cfg *config.Pipeline, opts CheckOptions) (*checkTransform, error) {
	snap, err := t.Latest(ctx)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", cfg.Tables.Bronze, err)
	}
	bronze, err := snap.Schema()
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", cfg.Tables.Bronze, err)
	}
	var st silver.Transform
	for _, c := range cfg.Transform.Columns {
		st.Columns = append(st.Columns, silver.ComputedColumn{Name: c.Name, Expr: c.Expr})
	}
	x, err := silver.NewTransformer(ctx, st, silver.Schema(bronze))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	ct := &checkTransform{x: x, computedTime: bronze.Field(cfg.Stream.EventTime) == nil, ev: cfg.Stream.EventTime}
	if !opts.From.IsZero() {
		ct.from = opts.From.UnixMicro()
	}
	if !opts.To.IsZero() {
		ct.to = opts.To.UnixMicro()
	}
	return ct, nil
}

// keepRange keeps the rows of b (transformed) in the range, when the scan could not filter on
// the event time (rows without one stay: validation judges them, as the stream does).
func (ct *checkTransform) keepRange(b *pq.Batch) (*pq.Batch, error) {
	ev := b.Column(ct.ev)
	if !ct.computedTime || ev == nil || (ct.from == 0 && ct.to == 0) {
		return b, nil
	}
	out, err := pq.NewBatch(b.Schema)
	if err != nil {
		return nil, err
	}
	for i := range b.Len() {
		if v := ev.Int64[i]; ev.IsNull(i) || ((ct.from == 0 || v >= ct.from) && (ct.to == 0 || v < ct.to)) {
			out.AppendRow(b, i)
		}
	}
	return out, nil
}
