package main

import (
	"strings"
	"testing"
)

func TestJoinCrossCheck(t *testing.T) {
	c := joinCase(1_000_000)
	ours := joinSummary{Events: 1_000_000, Batches: 41, Dropped: 4887, OutRows: 510300, StateRowsPeak: 274398, StateBytesPerRow: 120}
	for name, tc := range map[string]struct {
		theirs joinSummary
		want   string
	}{
		"equal":              {joinSummary{Events: 1_000_000, Batches: 41, Dropped: 4887, OutRows: 510300, StateRowsPeak: 274398}, "agree"},
		"no sink count":      {joinSummary{Batches: 41, Dropped: 4887, StateRowsPeak: 274398}, "agree"},
		"drops differ":       {joinSummary{Batches: 41, Dropped: 5004, OutRows: 510300, StateRowsPeak: 274398}, "DISAGREE"},
		"batches differ":     {joinSummary{Batches: 80, Dropped: 4887, OutRows: 510300, StateRowsPeak: 274398}, "DISAGREE"},
		"output differs":     {joinSummary{Batches: 41, Dropped: 4887, OutRows: 510299, StateRowsPeak: 274398}, "DISAGREE"},
		"state peak differs": {joinSummary{Batches: 41, Dropped: 4887, OutRows: 510300, StateRowsPeak: 1}, "DISAGREE"},
	} {
		got := joinCrossCheck(c, ours, tc.theirs)
		if !strings.HasPrefix(got, "1M events, 500k keys, file: join cross-check "+tc.want+":") {
			t.Errorf("%s: %s", name, got)
		}
	}
}
