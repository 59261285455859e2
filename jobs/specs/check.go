package specs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/join"
)

// Check gives Spark's answer to each join of a parsed config (spec/stream-joins.md §1), with the
// join operator's own rules (join.Spec.Validate) and Spark's exact texts, each a
// *config.FieldError wrapping config.ErrInvalid (exit 2). config checks everything else at
// Parse; it cannot ask the join operator itself, which sits above it in DESIGN.md §1, so every
// command that loads a config runs Check after Parse.
func Check(cfg *config.Pipeline) error {
	var errs []error
	for i, j := range cfg.Joins {
		path := fmt.Sprintf("joins[%d]", i)
		sp, err := JoinOperatorSpec(cfg, j)
		if err != nil {
			errs = append(errs, cfg.FieldError(path+".type", "%s", sparkText(err)))
			continue
		}
		if err := sp.Validate(); err != nil {
			errs = append(errs, cfg.FieldError(path+".type", "%s", sparkText(err)))
			continue
		}
		// The joined columns config named for the aggregations over the join must be the
		// operator's: a drift between the two would break gold over a join at run time.
		if err := sameColumns(cfg, j, sp.Type); err != nil {
			errs = append(errs, cfg.FieldError(path, "%v", err))
		}
	}
	return errors.Join(errs...)
}

// JoinOperatorSpec is the join operator's spec of a config join: its type, the number of keys,
// the BETWEEN condition in µs and which sides carry a watermark.
func JoinOperatorSpec(cfg *config.Pipeline, j config.Join) (join.Spec, error) {
	t, err := join.ParseType(j.Type)
	if err != nil {
		return join.Spec{}, err
	}
	l, _ := cfg.SourceByName(j.Left)
	r, _ := cfg.SourceByName(j.Right)
	return join.Spec{
		Type:           t,
		NumKeys:        len(j.On),
		Condition:      join.Between(j.Time.Lower.Microseconds(), j.Time.Upper.Microseconds()),
		LeftWatermark:  l.Stream.Watermark.IsSet(),
		RightWatermark: r.Stream.Watermark.IsSet(),
	}, nil
}

func sameColumns(cfg *config.Pipeline, j config.Join, t join.Type) error {
	l, _ := cfg.SourceByName(j.Left)
	r, _ := cfg.SourceByName(j.Right)
	ls, rs := l.SilverSchema(), r.SilverSchema()
	cols, ok := cfg.JoinColumns(j)
	if ls == nil || rs == nil || !ok {
		return nil // reported by Parse
	}
	out, err := join.Output(t, ls, rs, j.Right)
	if err != nil {
		return err
	}
	if len(out.Schema.Fields) != len(cols) {
		return errors.New("config and the join operator disagree on the joined columns")
	}
	for i, f := range out.Schema.Fields {
		if f.Name != cols[i].Name {
			return errors.New("config and the join operator disagree on the joined column " + f.Name)
		}
	}
	return nil
}

// sparkText is Spark's own message of a join.Spec.Validate rejection, without our prefix.
func sparkText(err error) string {
	msg := err.Error()
	for _, sentinel := range []error{join.ErrUnsupportedOperation, join.ErrBadSpec} {
		if errors.Is(err, sentinel) {
			msg = strings.TrimPrefix(msg, sentinel.Error()+": ")
		}
	}
	return msg
}
