package config

import (
	"os"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/internal/testshared"
)

// TestSinks: a sinks: entry parses with its defaults; GoldOfTable finds a gold sink's
// aggregation and no other table's.
func TestSinks(t *testing.T) {
	p := mustParse(t, minimal+"sinks:\n  - {name: gold_to_kafka, table: gold/g5, topic: g5_changes}\n  - {name: silver_out, table: /silver/events/, kind: kafka, topic: silver_changes, brokers: [\"h:9092\"], partitions: 3}\n")
	if len(p.Sinks) != 2 {
		t.Fatalf("sinks: %+v", p.Sinks)
	}
	s, ok := p.SinkByName("gold_to_kafka")
	if !ok || s.Kind != SinkKafka || s.Partitions != 1 || s.Topic != "g5_changes" || len(s.Brokers) != 0 {
		t.Fatalf("defaults: %+v, %v", s, ok)
	}
	if g, ok := p.GoldOfTable(s.Table); !ok || g.Name != "g5" {
		t.Fatalf("GoldOfTable(%q) = %+v, %v", s.Table, g, ok)
	}
	s, _ = p.SinkByName("silver_out")
	if s.Partitions != 3 || s.Brokers[0] != "h:9092" {
		t.Fatalf("explicit settings: %+v", s)
	}
	if _, ok := p.GoldOfTable(s.Table); ok {
		t.Fatal("GoldOfTable found an aggregation for the silver table")
	}
	if _, ok := p.SinkByName("nope"); ok {
		t.Fatal("SinkByName found a sink that is not there")
	}
}

// TestSinkErrors: each mistake in a sinks: entry is an error naming the entry's key and line.
func TestSinkErrors(t *testing.T) {
	cases := []struct {
		name, sinks string
		want        []string
	}{
		{"unknown table", "- {name: a, table: gold/nope, topic: t}", []string{`p.yaml:15: sinks[0].table: unknown table "gold/nope": expected the path of one of the config's tables: bronze/events, bronze/rejects, gold/g5, silver/events, silver/late_g5`}},
		{"no table", "- {name: a, topic: t}", []string{`sinks[0].table: required: expected the path of one of the config's tables, e.g. gold/g5`}},
		{"duplicate name", "- {name: a, table: gold/g5, topic: t1}\n- {name: a, table: gold/g5, topic: t2}", []string{`p.yaml:16: sinks[1].name: duplicate sink name "a" (also sinks[0])`}},
		{"no name", "- {table: gold/g5, topic: t}", []string{`sinks[0].name: required`}},
		{"bad name", "- {name: \"a b\", table: gold/g5, topic: t}", []string{`sinks[0].name: invalid name "a b"`}},
		{"missing topic", "- {name: a, table: gold/g5}", []string{`sinks[0].topic: required: expected the Kafka topic`}},
		{"bad topic", "- {name: a, table: gold/g5, topic: \"a/b\"}", []string{`sinks[0].topic: invalid topic "a/b"`}},
		{"topic twice", "- {name: a, table: gold/g5, topic: t}\n- {name: b, table: silver/events, topic: t}", []string{`sinks[1].topic: topic "t" is also sinks[0]'s`}},
		{"kind", "- {name: a, table: gold/g5, kind: s3, topic: t}", []string{`sinks[0].kind: invalid kind "s3": expected kafka`}},
		{"bad broker", "- {name: a, table: gold/g5, topic: t, brokers: [nohost]}", []string{`sinks[0].brokers[0]: invalid broker "nohost"`}},
		{"partitions", "- {name: a, table: gold/g5, topic: t, partitions: -2}", []string{`sinks[0].partitions: -2: expected a positive partition count`}},
		{"unknown key", "- {name: a, table: gold/g5, topc: t}", []string{`unknown key "topc" in sinks[0]`, `topic`}},
		{"not a list", "{name: a}", []string{`sinks`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(minimal+"sinks:\n"+indent(tc.sinks)+"\n"), "p.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// A sink may not write the topic a Kafka source reads.
	_, err := Parse([]byte(minimal+"landing: {kind: kafka, kafka: {topic: orders}}\nsinks: [{name: a, table: gold/g5, topic: orders}]\n"), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), `sinks[0].topic: topic "orders" is read by landing.kafka`) {
		t.Errorf("sink on a landing topic: %v", err)
	}
	// A sink publishes a change feed: not of a gold table that turns it off.
	_, err = Parse([]byte(strings.Replace(minimal, "aggregates: [{fn: count}]", "aggregates: [{fn: count}]\n    change_data_feed: false", 1)+"sinks: [{name: a, table: gold/g5, topic: t}]\n"), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), `sinks[0].table: gold[0] (g5) sets change_data_feed: false`) {
		t.Errorf("sink on a table without a feed: %v", err)
	}
	// jobs.publish needs a sink to publish.
	_, err = Parse([]byte(minimal+"jobs: {publish: {schedule: \"@every 1m\"}}\n"), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), `jobs.publish: the config has no sinks`) {
		t.Errorf("jobs.publish without sinks: %v", err)
	}
	p := mustParse(t, minimal+"sinks: [{name: a, table: gold/g5, topic: t}]\njobs: {publish: {after: replay, schedule: \"@every 5m\"}}\n")
	if p.Jobs.Publish.After != "replay" || p.Jobs.JobAfter()["publish"] != "replay" {
		t.Errorf("jobs.publish: %+v", p.Jobs.Publish)
	}
	if _, err := Parse([]byte(minimal+"sinks: [{name: a, table: gold/g5, topic: t}]\njobs: {publish: {after: publish}}\n"), "p.yaml"); err == nil {
		t.Error("publish after itself accepted")
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// TestDesignSinksContract parses the sinks: entry of DESIGN.md §8 (second round) exactly as
// written there, beside a gold aggregation named as its table says.
func TestDesignSinksContract(t *testing.T) {
	design, err := os.ReadFile(testshared.Path(t, "DESIGN.md"))
	if err != nil {
		t.Fatalf("DESIGN.md is part of the shared checkout: %v", err)
	}
	_, rest, ok := strings.Cut(string(design), "\nsinks:\n")
	if !ok {
		t.Fatal("DESIGN.md has no sinks: block")
	}
	entry, _, _ := strings.Cut(rest, "\n")
	p := mustParse(t, strings.Replace(minimal, "name: g5", "name: events_5m", 1)+"sinks:\n"+entry+"\n")
	s := p.Sinks[0]
	if s.Name != "gold_to_kafka" || s.Table != "gold/events_5m" || s.Kind != SinkKafka || s.Topic != "events_5m_changes" {
		t.Errorf("DESIGN.md's sink parsed as %+v", s)
	}
}
