package jobs

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
)

// TestKafkaSourceAmongSources: a Kafka source of sources: (beside a files top-level source)
// ingests by its kind into its own bronze, and serve's /metrics measures its consumer lag.
// Real broker: scripts/kafka.sh run -- go test ./jobs -run KafkaSource.
func TestKafkaSourceAmongSources(t *testing.T) {
	brokers := os.Getenv("MEDALLION_TEST_KAFKA_BROKERS")
	if brokers == "" {
		if os.Getenv("MEDALLION_REQUIRE_KAFKA") == "1" || os.Getenv("CI") == "true" {
			t.Fatal("MEDALLION_TEST_KAFKA_BROKERS is not set: run under scripts/kafka.sh run --")
		}
		t.Skip("no Kafka broker: run under scripts/kafka.sh run --")
	}
	topic := fmt.Sprintf("orders-%d", time.Now().UnixNano())
	cfg := testutil.Pipeline(t, fmt.Sprintf(`
lake: %s
landing: {path: landing/events/}
`+testutil.EventsSchema+`stream: {watermark: 10m}
sources:
  - name: orders
    landing: {kind: kafka, kafka: {topic: %s}}
`+indent(testutil.EventsSchema)+`    stream: {watermark: 10m}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count}]
serve: {listen: "127.0.0.1:0", lease_ttl: 5s, shutdown_timeout: 5s}
`, t.TempDir(), topic))
	cfg.ApplyEnv(func(k string) (string, bool) {
		if k == "KAFKA_BROKERS" {
			return brokers, true
		}
		return "", false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	orders, _ := cfg.ForSource("orders")
	o := gen.DefaultOptions()
	o.Lines, o.Seed, o.MalformedFraction = 600, 1, 0
	o.Columns = gen.DefaultColumns()
	if _, _, err := GenKafka(ctx, orders, o, 2); err != nil {
		t.Fatal(err)
	}
	reps, err := IngestSources(ctx, env, "orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Source != "orders" || reps[0].Lines != 600 || reps[0].Kafka == nil {
		t.Fatalf("ingest orders: %+v", reps)
	}
	var rows int
	for b, err := range table.Open(objstore.WithPrefix(env.Lake, "bronze/orders"), table.Options{}).Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		rows += b.Len()
		if b.Schema.Field("_kafka_offset") == nil {
			t.Fatal("bronze/orders has no _kafka_offset")
		}
	}
	if int64(rows) != reps[0].Rows {
		t.Errorf("bronze/orders holds %d rows, ingest reported %d", rows, reps[0].Rows)
	}
	o.Lines, o.Seed = 70, 2
	if _, _, err := GenKafka(ctx, orders, o, 2); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx) }()
	defer func() { stop(); <-done }()
	body := httpGet(t, "http://"+srv.Addr()+"/metrics")
	re := regexp.MustCompile(`medallion_kafka_consumer_lag\{partition="(\d)",topic="` + topic + `"\} (\d+)`)
	total := 0
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[2])
		total += n
	}
	if total != 70 {
		t.Errorf("/metrics lag of %s: %d, want the 70 records not ingested yet:\n%s", topic, total, grepLines(body, "medallion_kafka"))
	}
}

// indent moves a YAML block (ending in a newline) four spaces right.
func indent(s string) string {
	return regexp.MustCompile(`(?m)^`).ReplaceAllString(strings.TrimSuffix(s, "\n"), "    ") + "\n"
}
