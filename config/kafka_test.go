package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestKafkaLanding: a kafka landing parses with its defaults, and brokers come from
// KAFKA_BROKERS when the file has none.
func TestKafkaLanding(t *testing.T) {
	p := mustParse(t, minimal+"landing: {kind: kafka, kafka: {topic: orders}}\n")
	k := p.Landing.Kafka
	if p.Landing.Kind != LandingKafka || k.StartingOffsets != "earliest" || k.MaxRecordsPerTrigger != 1_000_000 || !k.FailsOnDataLoss() {
		t.Fatalf("defaults: kind %q, %+v", p.Landing.Kind, k)
	}
	if got := k.TopicList(); !reflect.DeepEqual(got, []string{"orders"}) {
		t.Fatalf("topics %v", got)
	}
	p.ApplyEnv(mapEnv(map[string]string{"KAFKA_BROKERS": "b1:9092, b2:9092"}))
	if !reflect.DeepEqual(k.Brokers, []string{"b1:9092", "b2:9092"}) {
		t.Fatalf("brokers from KAFKA_BROKERS: %v", k.Brokers)
	}
	if v, ok := p.LookupEnv("KAFKA_BROKERS"); !ok || v == "" {
		t.Fatal("LookupEnv does not read the environment ApplyEnv was given")
	}
	p = mustParse(t, minimal+"landing:\n  kind: kafka\n  format: csv\n  kafka: {brokers: [\"h:1\"], topics: [a, b], starting_offsets: latest, max_records_per_trigger: 5, fail_on_data_loss: false}\n")
	k = p.Landing.Kafka
	p.ApplyEnv(mapEnv(map[string]string{"KAFKA_BROKERS": "other:1"}))
	if !reflect.DeepEqual(k.Brokers, []string{"h:1"}) || !reflect.DeepEqual(k.TopicList(), []string{"a", "b"}) ||
		k.StartingOffsets != "latest" || k.MaxRecordsPerTrigger != 5 || k.FailsOnDataLoss() || p.Landing.Format != "csv" {
		t.Fatalf("explicit settings: %+v", k)
	}
	// A files landing has no kafka block, in the effective config too.
	p = mustParse(t, minimal)
	if p.Landing.Kind != LandingFiles || p.Landing.Kafka != nil || strings.Contains(p.Redacted(), "kafka") {
		t.Fatalf("files landing: kind %q, kafka %+v", p.Landing.Kind, p.Landing.Kafka)
	}
}

func TestKafkaLandingErrors(t *testing.T) {
	cases := []struct {
		name, landing string
		want          []string
	}{
		{"unknown kind", "{kind: sqs}", []string{`landing.kind: invalid value "sqs": expected files or kafka`}},
		{"kafka without block", "{kind: kafka}", []string{`landing.kafka: required with kind: kafka`}},
		{"block without kind", "{kafka: {topic: a}}", []string{`landing.kafka: only read with landing.kind: kafka (kind is files)`}},
		{"no topic", "{kind: kafka, kafka: {brokers: [\"h:1\"]}}", []string{`landing.kafka.topic: required`}},
		{"topic and topics", "{kind: kafka, kafka: {topic: a, topics: [b]}}", []string{`landing.kafka.topics: give topic or topics, not both`}},
		{"bad topic", "{kind: kafka, kafka: {topic: \"a b\"}}", []string{`landing.kafka.topic: invalid topic "a b"`}},
		{"topic twice", "{kind: kafka, kafka: {topics: [a, a]}}", []string{`landing.kafka.topics[1]: topic "a" is listed twice`}},
		{"bad broker", "{kind: kafka, kafka: {topic: a, brokers: [nohost]}}", []string{`landing.kafka.brokers[0]: invalid broker "nohost": expected host:port`}},
		{"bad start", "{kind: kafka, kafka: {topic: a, starting_offsets: middle}}", []string{`landing.kafka.starting_offsets: invalid value "middle": expected earliest or latest`}},
		{"bad limit", "{kind: kafka, kafka: {topic: a, max_records_per_trigger: -1}}", []string{`landing.kafka.max_records_per_trigger: -1: expected a positive number`}},
		{"unknown key", "{kind: kafka, kafka: {topic: a, group: g}}", []string{`unknown key "group" in landing.kafka`}},
		{"bad group", "{kind: kafka, kafka: {topic: a, group_id: \" g\"}}", []string{`landing.kafka.group_id: invalid group " g"`}},
		{"webhook", "{kind: kafka, kafka: {topic: a}, notify: {mode: webhook}}", []string{`landing.notify.mode: webhook is for S3 landing prefixes`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(minimal+"landing: "+tc.landing+"\n"), "p.yaml")
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
	// The _kafka_* columns are reserved.
	_, err := Parse([]byte(strings.Replace(minimal, "{name: amount, type: double}", "{name: _kafka_offset, type: long}", 1)), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), `"_kafka_offset" is reserved for bronze metadata`) {
		t.Fatalf("reserved column: %v", err)
	}
}
