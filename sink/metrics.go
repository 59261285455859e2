package sink

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count what sinks publish, on the registry they were made with.
type Metrics struct {
	rows *prometheus.CounterVec
}

// NewMetrics registers medallion_change_rows_published_total{sink,table,change_type} on reg:
// the records sinks published in committed transactions (a tombstone counts under the change
// type of the row it removes; pre-images replaced by their post-image are not published).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{rows: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "medallion_change_rows_published_total",
		Help: "Change rows a sink published to Kafka in committed transactions, by sink, table and change type.",
	}, []string{"sink", "table", "change_type"})}
	if err := reg.Register(m.rows); err != nil {
		return nil, fmt.Errorf("sink: register metrics: %w", err)
	}
	return m, nil
}

// published counts a committed transaction's records by change type.
func (m *Metrics) published(spec Spec, byType map[string]int64) {
	if m == nil {
		return
	}
	for typ, n := range byType {
		m.rows.WithLabelValues(spec.Name, spec.Table, typ).Add(float64(n))
	}
}
