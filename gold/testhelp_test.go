package gold

import "testing"

func mustAgg(t testing.TB, cfg AggConfig) *Aggregation {
	t.Helper()
	a, err := NewAggregation(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
