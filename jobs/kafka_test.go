package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/internal/testutil"
)

// TestKafkaLandingJobs: with landing.kind kafka, gen produces into the topic it creates, ingest
// reads it, and the consumer lag is right in the lag report, /metrics and /api/status.
func TestKafkaLandingJobs(t *testing.T) {
	brokers := os.Getenv("MEDALLION_TEST_KAFKA_BROKERS")
	if brokers == "" {
		if os.Getenv("MEDALLION_REQUIRE_KAFKA") == "1" || os.Getenv("CI") == "true" {
			t.Fatal("MEDALLION_TEST_KAFKA_BROKERS is not set: run under scripts/kafka.sh run --")
		}
		t.Skip("no Kafka broker: run under scripts/kafka.sh run --")
	}
	topic := fmt.Sprintf("jobs-%d", time.Now().UnixNano())
	cfg := testutil.Pipeline(t, fmt.Sprintf(`
lake: %s
landing: {kind: kafka, kafka: {topic: %s, max_records_per_trigger: 300}}
`+testutil.EventsSchema+`stream: {watermark: 10m, dedup: [event_id]}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count, as: count}]
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
	o := gen.DefaultOptions()
	o.Lines, o.Seed = 1000, 1
	o.Columns = gen.DefaultColumns()
	st, ks, err := GenKafka(ctx, cfg, o, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !ks.CreatedTopic || ks.Partitions != 3 || ks.Records != 1000 || st.Lines != 1000 {
		t.Fatalf("gen: %+v %+v", ks, st)
	}
	if lag := KafkaLagReport(ctx, env); lag == nil || lag.Problem != "" || lag.Total != 1000 || len(lag.Partitions) != 3 {
		t.Fatalf("lag before ingest: %+v", lag)
	}
	rep, err := Ingest(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Lines != 1000 || rep.Rows+rep.Rejected != 1000 || rep.Batches != 4 || rep.Kafka == nil || rep.Kafka.TotalLag != 0 {
		t.Fatalf("ingest: %+v", rep)
	}
	o.Lines, o.Seed = 250, 2
	if _, _, err := GenKafka(ctx, cfg, o, 3); err != nil {
		t.Fatal(err)
	}
	if lag := KafkaLagReport(ctx, env); lag.Total != 250 {
		t.Fatalf("lag after 250 more: %+v", lag)
	}
	if _, err := IngestKeys(ctx, env, []string{"landing/events/x.json"}); err == nil {
		t.Fatal("event-driven ingestion of object keys accepted for a kafka landing")
	}

	srv, err := NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx) }()
	defer func() { stop(); <-done }()
	base := "http://" + srv.Addr()
	body := httpGet(t, base+"/metrics")
	re := regexp.MustCompile(`medallion_kafka_consumer_lag\{partition="(\d)",topic="` + topic + `"\} (\d+)`)
	var total int
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[2])
		total += n
	}
	if total != 250 || !strings.Contains(body, "medallion_kafka_lag_up 1") {
		t.Fatalf("/metrics lag total %d, want 250:\n%s", total, grepLines(body, "medallion_kafka"))
	}
	var status struct {
		KafkaLag struct {
			Total      int64 `json:"total"`
			Partitions []any `json:"partitions"`
		} `json:"kafka_lag"`
	}
	if err := json.Unmarshal([]byte(httpGet(t, base+"/api/status")), &status); err != nil {
		t.Fatal(err)
	}
	if status.KafkaLag.Total != 250 || len(status.KafkaLag.Partitions) != 3 {
		t.Fatalf("/api/status kafka_lag %+v", status.KafkaLag)
	}
	if page := httpGet(t, base+"/"); !strings.Contains(page, `id="kafka-total-lag">250<`) {
		t.Fatalf("status page has no Kafka lag of 250")
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
	}
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
