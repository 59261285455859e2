package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testshared"
)

// TestDesignContract parses the pipeline config of DESIGN.md §8 exactly as written there: other
// tools and checks rely on those keys and meanings.
func TestDesignContract(t *testing.T) {
	design, err := os.ReadFile(testshared.Path(t, "DESIGN.md"))
	if err != nil {
		t.Fatalf("DESIGN.md is part of the shared checkout: %v", err)
	}
	_, rest, ok := strings.Cut(string(design), "Pipeline config (YAML")
	if !ok {
		t.Fatal("DESIGN.md has no pipeline config section")
	}
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.Contains(block, "gold:") {
		t.Fatalf("no YAML block in the pipeline config section")
	}
	p, err := Parse([]byte(block), "DESIGN.md§8")
	if err != nil {
		t.Fatalf("DESIGN.md §8 config rejected:\n%v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"lake", p.Lake, "s3://lake"},
		{"endpoint", p.S3.Endpoint, "http://127.0.0.1:9000"},
		{"path style", p.S3.UsePathStyle(), true},
		{"landing", p.Landing.Path, "landing/events/"},
		{"max files", p.Landing.MaxFilesPerTrigger, 1000},
		{"schema", len(p.Schema), 4},
		{"bronze", p.Tables.Bronze, "bronze/events"},
		{"stream", p.Stream.Name, "events"},
		{"checkpoint", p.Stream.Checkpoint, "_checkpoints/events"},
		{"watermark", p.Stream.Watermark.Duration, 10 * time.Minute},
		{"skew", p.Stream.MaxFutureSkew.Duration, time.Hour},
		{"trigger", p.Stream.Trigger.Kind, TriggerAvailableNow},
		{"gold", len(p.Gold), 2},
		{"quarantine", p.Gold[0].Quarantine, "silver/late_events_5m"},
		{"avg", p.Gold[0].Aggregates[2].Fn + "/" + p.Gold[0].Aggregates[2].Column + "/" + p.Gold[0].Aggregates[2].As, "avg/amount/avg_amount"},
		{"1h", p.Gold[1].Window.Size.Duration, time.Hour},
		{"replay lookback", p.Jobs.Replay.Lookback.Duration, 24 * time.Hour},
		{"vacuum retain", p.Jobs.Vacuum.Retain.Duration, 168 * time.Hour},
		{"merge schedule", p.Jobs.MergeLate.Schedule, "0 * * * *"},
		{"listen", p.Serve.Listen, "127.0.0.1:9464"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// The window alternatives in the comment are valid too.
	for _, w := range []string{"{type: sliding, size: 10m, slide: 5m}", "{type: session, gap: 5m}"} {
		if _, err := Parse([]byte(strings.Replace(block, "{type: tumbling, size: 5m}", w, 1)), "DESIGN.md§8"); err != nil {
			t.Errorf("window %s: %v", w, err)
		}
	}
	for _, tr := range []string{"once", "processing-time=30s"} {
		if _, err := Parse([]byte(strings.Replace(block, "trigger: available-now", "trigger: "+tr, 1)), "DESIGN.md§8"); err != nil {
			t.Errorf("trigger %s: %v", tr, err)
		}
	}
}
