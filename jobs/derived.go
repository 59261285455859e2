package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/spec"
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

// Refresh rebuilds the table name and the derived tables below it, each in one overwrite:
// a derived table from its upstream (late.RefreshDerived), a gold over a source from that
// source's silver or a gold over a join from the joined table, with the stream's state of the
// gold rebuilt alike (stream.RefreshGold, stream.RefreshJoinGold: the way out when its
// definition changes). A running stream, or a batch in flight, is refused with
// stream.ErrRefreshRefused, saying what to do instead.
func Refresh(ctx context.Context, env Env, name string) (RefreshReport, error) {
	var rep RefreshReport
	ds := specs.Derived(env.Config)
	lopts := late.Options{Lake: env.Lake, Clock: env.clock, Logger: env.Logger}
	g, ok := env.Config.GoldByName(name)
	if !ok {
		return rep, fmt.Errorf("%w: %s is not a table of the config", late.ErrNotDerived, name)
	}
	if !env.Config.IsDerived(*g) {
		// A serve running the stream would write batches under the old state meanwhile.
		holder, err := NewLeases(env.Lake, "", time.Minute, env.Clock).Holder(ctx, "stream")
		if err != nil {
			return rep, err
		}
		if holder != "" {
			return rep, fmt.Errorf("%w: the stream's lease is held by %s (a serve running it): stop it, then refresh %s",
				stream.ErrRefreshRefused, holder, name)
		}
		var gr stream.RefreshReport
		if j, ok := specs.Join(env.Config, env.Config.GoldSource(*g)); ok {
			gr, err = stream.RefreshJoinGold(ctx, stream.JoinOptions{Lake: env.Lake, Join: j, Clock: env.Clock, Logger: env.Logger}, name)
		} else {
			q, ok := goldQuery(env, name)
			if !ok {
				return rep, fmt.Errorf("jobs: no streaming query holds gold %s", name)
			}
			gr, err = stream.RefreshGold(ctx, stream.Options{Lake: env.Lake, Query: q, Clock: env.Clock, Logger: env.Logger}, name)
		}
		rep.Gold = &gr
		if err != nil {
			return rep, err
		}
	}
	reps, err := late.RefreshDerived(ctx, lopts, ds, name)
	rep.Derived = reps
	if errors.Is(err, late.ErrNotDerived) && rep.Gold != nil {
		err = nil // a gold with no derived table below it
	}
	return rep, err
}

// RefreshReport is what Refresh did: the gold over a source it rebuilt (nil for a derived
// table), then each derived table, in order.
type RefreshReport struct {
	Gold    *stream.RefreshReport `json:"gold,omitempty"`
	Derived []late.DeriveReport   `json:"refreshed"`
}

// goldQuery is the streaming query (of a source) that holds gold name.
func goldQuery(env Env, name string) (spec.Query, bool) {
	for _, q := range specs.Queries(env.Config) {
		for _, g := range q.Gold {
			if g.Name == name {
				return q, true
			}
		}
	}
	return spec.Query{}, false
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
