package deploy

import (
	"strings"
	"testing"
)

// TestComposeKafka: the local stack's Kafka is the version the tests run, single-node KRaft,
// reachable from the host on 9092 and from other services as kafka:29092, with a health check.
func TestComposeKafka(t *testing.T) {
	proj := loadCompose(t)
	k, err := proj.GetService("kafka")
	if err != nil {
		t.Fatalf("service kafka: %v", err)
	}
	if k.Image != "apache/kafka:4.1.2" {
		t.Errorf("kafka image %q: want apache/kafka:4.1.2, the version scripts/kafka.sh tests", k.Image)
	}
	env := func(name string) string {
		if v := k.Environment[name]; v != nil {
			return *v
		}
		return ""
	}
	if env("KAFKA_PROCESS_ROLES") != "broker,controller" || !strings.Contains(env("KAFKA_ADVERTISED_LISTENERS"), "kafka:29092") ||
		!strings.Contains(env("KAFKA_ADVERTISED_LISTENERS"), "localhost:9092") {
		t.Errorf("kafka must be a KRaft broker+controller advertising kafka:29092 and localhost:9092: %v", k.Environment)
	}
	published := false
	for _, p := range k.Ports {
		if p.Published == "9092" && p.Target == 9092 {
			published = true
		}
	}
	if !published {
		t.Errorf("kafka must publish 9092: %+v", k.Ports)
	}
	if k.HealthCheck == nil || len(k.HealthCheck.Test) == 0 {
		t.Error("kafka has no health check")
	}
}
