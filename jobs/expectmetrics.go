package jobs

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/stream"
)

// expectationMetrics counts rows per expectation and outcome from the stream's progress:
// medallion_expectation_rows_total{source,expectation,outcome} with outcome passed, failed or
// dropped (the failed rows a drop expectation sent to rejects).
type expectationMetrics struct {
	source string
	rows   *prometheus.CounterVec
}

func newExpectationMetrics(env Env, reg prometheus.Registerer) (*expectationMetrics, error) {
	m := &expectationMetrics{source: env.Config.Stream.Name, rows: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "medallion_expectation_rows_total",
		Help: "Rows judged by each data-quality expectation, by outcome (passed, failed; dropped: failed rows sent to rejects).",
	}, []string{"source", "expectation", "outcome"})}
	if err := reg.Register(m.rows); err != nil {
		return nil, err
	}
	// Every series exists from the start, so that rate() sees the first batch.
	for _, src := range env.Config.AllSources() {
		for _, e := range src.Expectations {
			for _, o := range []string{"passed", "failed", "dropped"} {
				m.rows.WithLabelValues(src.Name, e.Name, o)
			}
		}
	}
	return m, nil
}

// OnProgress adds one batch's counts, under the source its query is named after.
func (m *expectationMetrics) OnProgress(p *stream.Progress) {
	source := p.Name
	if source == "" {
		source = m.source
	}
	for _, e := range p.Expectations {
		m.rows.WithLabelValues(source, e.Name, "passed").Add(float64(e.Passed))
		m.rows.WithLabelValues(source, e.Name, "failed").Add(float64(e.Failed))
		m.rows.WithLabelValues(source, e.Name, "dropped").Add(float64(e.Dropped))
	}
}

// withExpectationMetrics makes the scheduled stream job report its batches' expectation
// counts to reg.
func withExpectationMetrics(catalog []Scheduled, env Env, reg prometheus.Registerer) ([]Scheduled, error) {
	m, err := newExpectationMetrics(env, reg)
	if err != nil {
		return nil, err
	}
	for i := range catalog {
		if catalog[i].Name == "stream" {
			catalog[i].Run = func(ctx context.Context, env Env) (any, error) {
				if env.Config.MultiSource() {
					return StreamSources(ctx, env, "", config.Trigger{}, m)
				}
				return Stream(ctx, env, config.Trigger{}, m)
			}
		}
	}
	return catalog, nil
}
