package main

import (
	"errors"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/late"
)

func TestReplayRangeFlags(t *testing.T) {
	now := time.Date(2024, 5, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		args     []string
		from, to time.Time
		source   string
		bad      bool
	}{
		{name: "since", args: []string{"--since", "24h"}, from: now.Add(-24 * time.Hour), to: now, source: "silver"},
		{name: "from-to", args: []string{"--from", "2024-05-01T08:00:00Z", "--to", "2024-05-01 09:30:00", "--source", "bronze"},
			from: time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC), to: time.Date(2024, 5, 1, 9, 30, 0, 0, time.UTC), source: "bronze"},
		{name: "date", args: []string{"--from", "2024-05-01", "--to", "2024-05-02"}, from: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), to: time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC), source: "silver"},
		{name: "none", bad: true},
		{name: "both", args: []string{"--since", "1h", "--from", "2024-05-01", "--to", "2024-05-02"}, bad: true},
		{name: "from-only", args: []string{"--from", "2024-05-01"}, bad: true},
		{name: "reversed", args: []string{"--from", "2024-05-02", "--to", "2024-05-01"}, bad: true},
		{name: "bad-since", args: []string{"--since", "-1h"}, bad: true},
		{name: "bad-time", args: []string{"--from", "yesterday", "--to", "2024-05-01"}, bad: true},
		{name: "bad-source", args: []string{"--since", "1h", "--source", "gold"}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &cobra.Command{}
			for _, f := range []string{"since", "from", "to"} {
				cmd.Flags().String(f, "", "")
			}
			cmd.Flags().String("source", "silver", "")
			if err := cmd.Flags().Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			r, err := replayRange(cmd, now)
			if tc.bad {
				var ee *exitError
				if err == nil || !errors.As(err, &ee) || ee.code != 2 {
					t.Fatalf("want a usage error (exit 2), got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := (late.Range{From: tc.from, To: tc.to, Source: tc.source}); !r.From.Equal(want.From) || !r.To.Equal(want.To) || r.Source != want.Source {
				t.Fatalf("got %+v, want %+v", r, want)
			}
		})
	}
}
