package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestKafkaGenIngestLag: with landing.kind kafka, `medallion gen` creates the topic with
// --partitions and produces into it, `run ingest` reads it all (summary with its kafka part),
// and `lag --json` shows no consumer lag left.
func TestKafkaGenIngestLag(t *testing.T) {
	brokers := os.Getenv("MEDALLION_TEST_KAFKA_BROKERS")
	if brokers == "" {
		if os.Getenv("MEDALLION_REQUIRE_KAFKA") == "1" || os.Getenv("CI") == "true" {
			t.Fatal("MEDALLION_TEST_KAFKA_BROKERS is not set: run under scripts/kafka.sh run --")
		}
		t.Skip("no Kafka broker: run under scripts/kafka.sh run --")
	}
	t.Setenv("KAFKA_BROKERS", brokers)
	topic := fmt.Sprintf("cli-%d", time.Now().UnixNano())
	cfg := writeGenConfig(t, t.TempDir(), "landing: {kind: kafka, kafka: {topic: "+topic+", max_records_per_trigger: 200}}\n")
	out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "700", "--seed", "3", "--partitions", "2", "--start", "now")
	if err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	var g struct {
		Topic        string `json:"topic"`
		Partitions   int    `json:"partitions"`
		CreatedTopic bool   `json:"created_topic"`
		Records      int64  `json:"records"`
		Lines        int64  `json:"lines"`
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil || g.Topic != topic || g.Partitions != 2 || !g.CreatedTopic || g.Records != 700 || g.Lines != 700 {
		t.Fatalf("gen summary %s (%v)", out, err)
	}
	out, err = runGenCLI(t, "run", "ingest", "--config", cfg)
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	var last string // the summary, among the log lines
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"batches"`) {
			last = l
		}
	}
	var sum struct {
		Result struct {
			Batches  int   `json:"batches"`
			Lines    int64 `json:"lines"`
			Rows     int64 `json:"rows"`
			Rejected int64 `json:"rejected"`
			Kafka    struct {
				Partitions int   `json:"partitions"`
				TotalLag   int64 `json:"totalLag"`
			} `json:"kafka"`
		} `json:"result"`
	}
	ing := &sum.Result
	if err := json.Unmarshal([]byte(last), &sum); err != nil || ing.Lines != 700 || ing.Rows+ing.Rejected != 700 ||
		ing.Batches != 4 || ing.Kafka.Partitions != 2 || ing.Kafka.TotalLag != 0 {
		t.Fatalf("ingest summary %s (%v)\n%s", last, err, out)
	}
	out, err = runGenCLI(t, "lag", "--config", cfg, "--json", "--since", "8760h")
	if err != nil {
		t.Fatalf("lag: %v\n%s", err, out)
	}
	var lag struct {
		Kafka struct {
			Partitions []struct {
				Lag int64 `json:"lag"`
			} `json:"partitions"`
			Total int64 `json:"total"`
		}
	}
	if err := json.Unmarshal([]byte(out), &lag); err != nil || len(lag.Kafka.Partitions) != 2 || lag.Kafka.Total != 0 {
		t.Fatalf("lag --json: %s (%v)", out, err)
	}
}
