package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/kafka"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

// TestServePublishesAfterMergeLate: with a sink and no jobs.publish, serve runs the publish job
// right after a merge-late run; the compacted topic then equals gold scanned, and /metrics
// counts the rows published.
func TestServePublishesAfterMergeLate(t *testing.T) {
	brokers := os.Getenv("MEDALLION_TEST_KAFKA_BROKERS")
	if brokers == "" {
		if os.Getenv("MEDALLION_REQUIRE_KAFKA") == "1" || os.Getenv("CI") == "true" {
			t.Fatal("MEDALLION_TEST_KAFKA_BROKERS is not set: run under scripts/kafka.sh run --")
		}
		t.Skip("no Kafka broker: run under scripts/kafka.sh run --")
	}
	ctx := context.Background()
	topic := fmt.Sprintf("serve-sink-%d", time.Now().UnixNano())
	quoted := make([]string, 0)
	for _, b := range strings.Split(brokers, ",") {
		quoted = append(quoted, fmt.Sprintf("%q", b))
	}
	cfg := testPipeline(t, t.TempDir(), fmt.Sprintf("sinks: [{name: s_%d, table: gold/events_5m, topic: %s, brokers: [%s]}]\njobs: {merge_late: {schedule: \"@every 1h\"}}\n",
		time.Now().UnixNano(), topic, strings.Join(quoted, ",")))
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	land := func(name string, minutes []int) {
		var b strings.Builder
		for i, m := range minutes {
			fmt.Fprintf(&b, `{"event_id":"%s%d","event_type":"%s","amount":1,"event_time":"%s"}`+"\n", name, i, []string{"a", "b", "c"}[i%3],
				time.Date(2026, 12, 1, 10, m, 0, 0, time.UTC).Format(time.RFC3339))
		}
		if err := objstore.PutBytes(ctx, env.Lake, "landing/events/"+name+".json", []byte(b.String())); err != nil {
			t.Fatal(err)
		}
		if _, err := Ingest(ctx, env); err != nil {
			t.Fatal(err)
		}
		if _, err := Stream(ctx, env, config.Trigger{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var first, second []int
	for i := range 60 {
		first = append(first, i)
		second = append(second, (i*7)%40) // late: behind the watermark of 59 - 10
	}
	land("one", first)
	land("two", append(second, 70, 71))

	srv, err := NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	if !srv.Scheduler().RunNow("merge-late") {
		t.Fatal("merge-late is not scheduled")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var pub Status
		for _, st := range srv.Scheduler().Statuses() {
			if st.Name == "publish" {
				pub = st
			}
		}
		if pub.Runs > 0 {
			if pub.LastResult != "ok" {
				t.Fatalf("publish after merge-late: %+v", pub)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish never ran after merge-late: %+v", srv.Scheduler().Statuses())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := get(t, "http://"+srv.Addr()+"/metrics"); !strings.Contains(m, `medallion_change_rows_published_total{change_type="update_postimage"`) {
		t.Errorf("/metrics lacks the post-images published:\n%s", m)
	}

	view := map[string]any{}
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	conn := kafka.Conn{Brokers: strings.Split(brokers, ",")}
	if err := kafka.WaitStable(rctx, conn, topic, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := kafka.ReadCommitted(rctx, conn, topic, time.Minute, func(r *kgo.Record) error {
		if r.Value == nil {
			delete(view, string(r.Key))
			return nil
		}
		var v struct{ Row map[string]any }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return err
		}
		view[string(r.Key)] = v.Row
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	gold := map[string]any{}
	for b, err := range table.Open(objstore.WithPrefix(env.Lake, "gold/events_5m"), table.Options{}).Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for r := range b.Len() {
			var row map[string]any
			if err := json.Unmarshal(pq.AppendJSONRow(nil, b, r), &row); err != nil {
				t.Fatal(err)
			}
			w := row["window"].(map[string]any)
			gold[fmt.Sprintf(`{"window":{"start":%q,"end":%q},"event_type":%q}`, w["start"], w["end"], row["event_type"])] = row
		}
	}
	if len(gold) == 0 || !reflect.DeepEqual(view, gold) {
		t.Errorf("the compacted topic differs from gold:\n topic %v\n gold  %v", view, gold)
	}
}
