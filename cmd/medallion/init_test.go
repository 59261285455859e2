package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitCommand: init creates every table of the config on a lake that does not exist yet,
// says what to run next, and a second run finds everything in place.
func TestInitCommand(t *testing.T) {
	lake := filepath.Join(t.TempDir(), "lake")
	cfg := writeGenConfig(t, lake, "")
	out, err := runGenCLI(t, "init", "--config", cfg)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	for _, want := range []string{"put-if-absent works", "created: bronze/events, bronze/rejects, silver/events, silver/late_g5, gold/g5", "Next:", "medallion run ingest --config " + cfg} {
		if !strings.Contains(out, want) {
			t.Errorf("init said %q; want %q in it", out, want)
		}
	}
	for _, p := range []string{"bronze/events", "bronze/rejects", "silver/events", "silver/late_g5", "gold/g5"} {
		if _, err := os.Stat(filepath.Join(lake, p, "_delta_log", "00000000000000000000.json")); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	out, err = runGenCLI(t, "init", "--config", cfg)
	if err != nil || strings.Contains(out, "created:") || !strings.Contains(out, "already there: bronze/events") {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	if _, err := runGenCLI(t, "init"); err == nil || exitCode(err) != 2 {
		t.Fatalf("init without --config: %v", err)
	}
}

// TestInitKafkaNext: on a Kafka landing, init's next steps name the topic gen produces into,
// not a landing prefix of objects (it said "synthetic events ... into landing/events/").
func TestInitKafkaNext(t *testing.T) {
	cfg := writeGenConfig(t, filepath.Join(t.TempDir(), "lake"), "landing: {kind: kafka, kafka: {brokers: [127.0.0.1:1], topic: sensor-events}}\n")
	out, err := runGenCLI(t, "init", "--config", cfg)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if strings.Contains(out, "landing/events/") || strings.Contains(out, "NDJSON objects") || !strings.Contains(out, "into Kafka topic sensor-events") {
		t.Fatalf("init on a Kafka landing says:\n%s", out)
	}
}
