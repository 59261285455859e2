package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/late"
)

// Derive keeps every derived table of the config (gold over another gold,
// docs/derived-tables.md), each after its upstream: what stream, merge-late and replay run
// after their own work, so that a correction reaches every level in the same run.
func Derive(ctx context.Context, env Env) ([]late.DeriveReport, error) {
	ds := specs.Derived(env.Config)
	if len(ds) == 0 {
		return nil, nil
	}
	return late.DeriveAll(ctx, late.Options{Lake: env.Lake, Clock: env.clock, Logger: env.Logger}, ds)
}

// Refresh rebuilds the derived table name and the derived tables below it, each in one
// overwrite (late.RefreshDerived). A gold over a source or a join is refused
// (late.ErrNotDerived): it is rebuilt from silver by replay, not by a refresh.
func Refresh(ctx context.Context, env Env, name string) ([]late.DeriveReport, error) {
	ds := specs.Derived(env.Config)
	reps, err := late.RefreshDerived(ctx, late.Options{Lake: env.Lake, Clock: env.clock, Logger: env.Logger}, ds, name)
	if errors.Is(err, late.ErrNotDerived) {
		return nil, fmt.Errorf("%w: %s is not a derived table; a gold over a source or a join is rebuilt with run replay "+
			"(docs/derived-tables.md)", err, name)
	}
	return reps, err
}

// WithDerived runs Derive after a job that changes gold tables (stream, merge-late, replay)
// succeeded, and returns the job's summary with the derived tables' reports under "derived".
// A config without derived tables gets the job's summary unchanged.
func WithDerived(ctx context.Context, env Env, summary any, err error) (any, error) {
	if err != nil || len(env.Config.DerivedOrder()) == 0 {
		return summary, err
	}
	reps, err := Derive(ctx, env)
	if reps == nil {
		reps = []late.DeriveReport{}
	}
	return derivedSummary{job: summary, derived: reps}, err
}

// derivedSummary is a job's summary (a JSON object) with "derived" added.
type derivedSummary struct {
	job     any
	derived []late.DeriveReport
}

func (s derivedSummary) MarshalJSON() ([]byte, error) {
	d, err := json.Marshal(s.derived)
	if err != nil {
		return nil, err
	}
	j, err := json.Marshal(s.job)
	if err != nil {
		return nil, err
	}
	j = bytes.TrimSpace(j)
	switch {
	case bytes.Equal(j, []byte("null")), bytes.Equal(j, []byte("{}")):
		return []byte(`{"derived":` + string(d) + `}`), nil
	case len(j) > 0 && j[0] == '{':
		return append(append(append(j[:len(j)-1:len(j)-1], `,"derived":`...), d...), '}'), nil
	}
	return nil, fmt.Errorf("jobs: a summary that is not a JSON object cannot carry derived tables: %s", j)
}
