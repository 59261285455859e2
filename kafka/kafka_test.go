package kafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testConn is the test broker of scripts/kafka.sh. Without one the test is skipped, unless
// MEDALLION_REQUIRE_KAFKA=1 or CI=true (make test sets it), where a missing broker fails.
func testConn(t *testing.T) Conn {
	t.Helper()
	b := os.Getenv("MEDALLION_TEST_KAFKA_BROKERS")
	if b == "" {
		if os.Getenv("MEDALLION_REQUIRE_KAFKA") == "1" || os.Getenv("CI") == "true" {
			t.Fatal("MEDALLION_TEST_KAFKA_BROKERS is not set: run under scripts/kafka.sh run -- (make test does)")
		}
		t.Skip("no Kafka broker: run under scripts/kafka.sh run -- to test against a real broker")
	}
	return Conn{Brokers: strings.Split(b, ",")}
}

// TestAgainstBroker: a topic is created once (the second EnsureTopic finds it with its own
// partition count), the producer's records are where it put them, ListOffsets sees them and
// refuses a missing topic, ReadRange hands on exactly the offsets of its range, and a group's
// committed offsets are the ranges' ends.
func TestAgainstBroker(t *testing.T) {
	conn := testConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := conn.NewClient(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := fmt.Sprintf("kafka-pkg-%d", time.Now().UnixNano())

	parts, created, err := EnsureTopic(ctx, cl, topic, 3)
	if err != nil || parts != 3 || !created {
		t.Fatalf("EnsureTopic (new) = %d, %v, %v; want 3, true, nil", parts, created, err)
	}
	parts, created, err = EnsureTopic(ctx, cl, topic, 7)
	if err != nil || parts != 3 || created {
		t.Fatalf("EnsureTopic (existing) = %d, %v, %v; want 3, false, nil", parts, created, err)
	}

	const n = 90 // record i to partition i%3, value "v<i>": offset i/3 of its partition
	prod := NewProducer(cl)
	for i := range n {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := prod.Wait(); err != nil {
		t.Fatal(err)
	}

	starts, ends, err := ListOffsets(ctx, cl, []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		tp := TopicPartition{topic, p}
		if starts[tp] != 0 || ends[tp] != n/3 {
			t.Errorf("partition %d: offsets [%d, %d), want [0, %d)", p, starts[tp], ends[tp], n/3)
		}
	}
	if _, _, err := ListOffsets(ctx, cl, []string{topic + "-missing"}); !errors.Is(err, ErrNoTopic) {
		t.Errorf("ListOffsets of a missing topic: %v, want ErrNoTopic", err)
	}

	rd, err := conn.NewClient(RangeReaderOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r := Range{Topic: topic, Partition: 1, From: 5, To: 17}
	var got []string
	if err := ReadRange(ctx, rd, r, time.Minute, func(rec *kgo.Record) error {
		got = append(got, fmt.Sprintf("%d=%s", rec.Offset, rec.Value))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for off := r.From; off < r.To; off++ {
		want = append(want, fmt.Sprintf("%d=v%d", off, 3*off+1))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ReadRange %s:\n got %v\nwant %v", r, got, want)
	}
	stop := errors.New("stop")
	if err := ReadRange(ctx, rd, r, time.Minute, func(*kgo.Record) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("ReadRange with a failing callback: %v, want its error", err)
	}

	group := topic + "-group"
	if err := CommitGroupOffsets(ctx, cl, group, []Range{r, {Topic: topic, Partition: 2, From: 0, To: 9}}); err != nil {
		t.Fatal(err)
	}
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p, at := range map[int32]int64{1: 17, 2: 9} {
		if o, ok := offs.Lookup(topic, p); !ok || o.At != at {
			t.Errorf("group offset of partition %d = %+v, want %d", p, o, at)
		}
	}
}

func TestLags(t *testing.T) {
	ends := map[TopicPartition]int64{{"b", 0}: 10, {"a", 1}: 7, {"a", 0}: 5}
	next := map[TopicPartition]int64{{"a", 0}: 5, {"b", 0}: 12} // b/0 ahead: a recreated topic
	got := Lags(ends, next)
	want := []PartitionLag{
		{Topic: "a", Partition: 0, Committed: 5, End: 5, Lag: 0},
		{Topic: "a", Partition: 1, Committed: -1, End: 7, Lag: 7},
		{Topic: "b", Partition: 0, Committed: 12, End: 10, Lag: 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Lags = %v, want %v", got, want)
	}
	if total := TotalLag(got); total != 7 {
		t.Errorf("TotalLag = %d, want 7", total)
	}
}
