package bronze

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/kafka"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/table"
)

// kafkaBrokers is the test broker of scripts/kafka.sh. Without one the test is skipped, unless
// MEDALLION_REQUIRE_KAFKA=1 or CI=true (make test sets it), where a missing broker fails.
func kafkaBrokers(t testing.TB) []string {
	t.Helper()
	b := os.Getenv("MEDALLION_TEST_KAFKA_BROKERS")
	if b == "" {
		if os.Getenv("MEDALLION_REQUIRE_KAFKA") == "1" || os.Getenv("CI") == "true" {
			t.Fatal("MEDALLION_TEST_KAFKA_BROKERS is not set: run under scripts/kafka.sh run -- (make test does)")
		}
		t.Skip("no Kafka broker: run under scripts/kafka.sh run -- to test against a real broker")
	}
	return strings.Split(b, ",")
}

var topicSeq atomic.Int64

// newTopic creates a topic of a unique name with the given partitions.
func newTopic(t testing.TB, brokers []string, partitions int32) string {
	t.Helper()
	name := fmt.Sprintf("t-%s-%d-%d", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()), time.Now().UnixNano()%1e9, topicSeq.Add(1))
	if len(name) > 200 {
		name = name[:200]
	}
	cl := kafkaClient(t, brokers)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return name
}

func kafkaClient(t testing.TB, brokers []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produced is the test's own record of what it put in the topic: for each (partition, offset),
// whether it is a valid record (a bronze row) or not (a reject), and its event id.
type produced struct {
	valid map[string]string // "p@offset" -> event id
	bad   map[string]string // "p@offset" -> what was wrong
}

func newProduced() *produced {
	return &produced{valid: map[string]string{}, bad: map[string]string{}}
}

// produce writes n records spread over partitions [0, parts), about one in badEvery of them not a
// record (invalid JSON, bad UTF-8, a tombstone, a value over maxLine), and records each offset.
func produce(t testing.TB, cl *kgo.Client, topic string, parts int32, n int, rng *rand.Rand, badEvery int, maxLine int, into *produced) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, 0, n)
	kinds := map[string]string{} // by event id (the record key): results come in any order
	base := len(into.valid) + len(into.bad)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("e-%s-%d", topic, base+i)
		rec := &kgo.Record{Topic: topic, Partition: rng.Int32N(parts), Key: []byte(id)}
		kind := ""
		if badEvery > 0 && rng.IntN(badEvery) == 0 {
			switch rng.IntN(4) {
			case 0:
				kind, rec.Value = "invalid_json", []byte(`{"event_id":"broken`)
			case 1:
				kind, rec.Value = "invalid_utf8", []byte("{\"event_id\":\"\xff\xfe\"}")
			case 2:
				kind, rec.Value = "tombstone", nil
			default:
				kind, rec.Value = "too_long", []byte(`{"event_id":"`+strings.Repeat("x", maxLine)+`"}`)
			}
		} else {
			rec.Value = fmt.Appendf(nil, `{"event_id":%q,"event_type":"t%d","amount":%d.5,"event_time":"2024-05-01T12:%02d:00Z"}`, id, i%3, i, i%60)
		}
		recs = append(recs, rec)
		kinds[id] = kind
	}
	for _, r := range cl.ProduceSync(ctx, recs...) {
		if r.Err != nil {
			t.Fatalf("produce: %v", r.Err)
		}
		k := fmt.Sprintf("%d@%d", r.Record.Partition, r.Record.Offset)
		id := string(r.Record.Key)
		if kinds[id] != "" {
			into.bad[k] = kinds[id]
		} else {
			into.valid[k] = id
		}
	}
}

func kafkaOptions(brokers []string, topic string) KafkaOptions {
	return KafkaOptions{
		Brokers: brokers, Topics: []string{topic},
		Declared: declaredEvents(), BronzePath: "bronze/events", RejectsPath: "bronze/rejects",
		CheckpointPath: "_checkpoints/ingest-kafka", FlushRows: 500,
		Limits: Limits{MaxLineBytes: 4096}, StallTimeout: time.Minute,
	}
}

// kafkaTableRows reads "partition@offset" of every bronze and rejects row, failing on any offset
// present twice or any bronze row whose _kafka_* columns disagree with its lineage columns.
func kafkaTableRows(t testing.TB, lake objstore.Bucket, topic string) (rows map[string]string, rejects map[string]string) {
	t.Helper()
	ctx := context.Background()
	rows, rejects = map[string]string{}, map[string]string{}
	seen := map[string]bool{}
	bt := table.Open(objstore.WithPrefix(lake, "bronze/events"), table.Options{})
	cols := []string{"event_id", ColSourceFile, ColSourceOffset, ColKafkaTopic, ColKafkaPartition, ColKafkaOffset, ColKafkaKey, ColKafkaTimestamp}
	for b, err := range bt.Scan(ctx, table.ScanOptions{Columns: cols}) {
		if err != nil {
			t.Fatalf("scan bronze: %v", err)
		}
		for i := 0; i < b.Len(); i++ {
			k := fmt.Sprintf("%d@%d", b.Columns[4].Int32[i], b.Columns[5].Int64[i])
			if seen[k] {
				t.Fatalf("offset %s is in the tables twice", k)
			}
			seen[k] = true
			if got, want := b.Columns[1].StringAt(i), KafkaSourceName(topic, b.Columns[4].Int32[i]); got != want {
				t.Fatalf("row %s: _source_file %q, want %q", k, got, want)
			}
			if b.Columns[2].Int64[i] != b.Columns[5].Int64[i] || b.Columns[3].StringAt(i) != topic {
				t.Fatalf("row %s: lineage columns disagree", k)
			}
			if string(b.Columns[6].BytesAt(i)) != b.Columns[0].StringAt(i) {
				t.Fatalf("row %s: _kafka_key %q, want the event id %q", k, b.Columns[6].BytesAt(i), b.Columns[0].StringAt(i))
			}
			if ts := b.Columns[7].Int64[i]; ts < time.Now().Add(-time.Hour).UnixMicro() || ts > time.Now().Add(time.Minute).UnixMicro() {
				t.Fatalf("row %s: _kafka_timestamp %d is not the produce time", k, ts)
			}
			rows[k] = b.Columns[0].StringAt(i)
		}
	}
	rt := table.Open(objstore.WithPrefix(lake, "bronze/rejects"), table.Options{})
	for b, err := range rt.Scan(ctx, table.ScanOptions{Columns: []string{"source_file", "source_offset", "reason", "error"}}) {
		if err != nil {
			t.Fatalf("scan rejects: %v", err)
		}
		for i := 0; i < b.Len(); i++ {
			src := b.Columns[0].StringAt(i)
			prefix := "kafka://" + topic + "/"
			if !strings.HasPrefix(src, prefix) {
				t.Fatalf("reject source_file %q does not name the topic and partition", src)
			}
			k := fmt.Sprintf("%s@%d", strings.TrimPrefix(src, prefix), b.Columns[1].Int64[i])
			if seen[k] {
				t.Fatalf("offset %s is in the tables twice", k)
			}
			seen[k] = true
			if e := b.Columns[3].StringAt(i); !strings.Contains(e, fmt.Sprintf("offset %d", b.Columns[1].Int64[i])) || !strings.Contains(e, "topic "+topic) {
				t.Fatalf("reject %s: error %q does not name the topic, partition and offset", k, e)
			}
			rejects[k] = b.Columns[2].StringAt(i)
		}
	}
	return rows, rejects
}

// checkExactlyOnce: bronze holds every valid record once, rejects every bad one once, nothing else.
func checkExactlyOnce(t testing.TB, lake objstore.Bucket, topic string, want *produced) {
	t.Helper()
	rows, rejects := kafkaTableRows(t, lake, topic)
	if len(rows) != len(want.valid) || len(rejects) != len(want.bad) {
		t.Fatalf("bronze %d rows, rejects %d; produced %d valid and %d bad records", len(rows), len(rejects), len(want.valid), len(want.bad))
	}
	for k, id := range want.valid {
		if rows[k] != id {
			t.Fatalf("record %s (%s): bronze has %q", k, id, rows[k])
		}
	}
	wantReason := map[string]string{"invalid_json": ReasonInvalidJSON, "invalid_utf8": ReasonInvalidUTF8, "tombstone": ReasonNotObject, "too_long": ReasonTooLong}
	for k, kind := range want.bad {
		if rejects[k] != wantReason[kind] {
			t.Fatalf("bad record %s (%s): rejects reason %q, want %q", k, kind, rejects[k], wantReason[kind])
		}
	}
}

func fileLake(t testing.TB) objstore.Bucket {
	t.Helper()
	b, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func runKafka(t testing.TB, lake objstore.Bucket, opts KafkaOptions) (Report, error) {
	t.Helper()
	x, err := NewKafkaIngester(lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return x.Run(ctx)
}

// TestKafkaIngestExactlyOnce: records over 4 partitions, some of them not records, in batches of
// at most 700 offsets: bronze holds each valid record once with its _kafka_* columns, rejects
// each bad one with its topic, partition and offset; a rerun adds nothing; records produced
// later are taken by the next run, and only they.
func TestKafkaIngestExactlyOnce(t *testing.T) {
	brokers := kafkaBrokers(t)
	topic := newTopic(t, brokers, 4)
	cl := kafkaClient(t, brokers)
	rng := rand.New(rand.NewPCG(1, 2))
	want := newProduced()
	produce(t, cl, topic, 4, 3000, rng, 25, 4096, want)
	if len(want.bad) == 0 {
		t.Fatal("the workload has no bad records")
	}
	lake := fileLake(t)
	opts := kafkaOptions(brokers, topic)
	opts.MaxRecordsPerTrigger = 700
	opts.GroupID = "monitor-" + topic
	rep, err := runKafka(t, lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Batches != 5 || rep.Lines != 3000 || rep.Rows != int64(len(want.valid)) || rep.Rejected != int64(len(want.bad)) {
		t.Fatalf("report %+v: want 5 batches (3000 offsets, 700 a batch), %d rows, %d rejected", rep, len(want.valid), len(want.bad))
	}
	if rep.Kafka == nil || rep.Kafka.Partitions != 4 || rep.Kafka.TotalLag != 0 || len(rep.Kafka.Lag) != 4 {
		t.Fatalf("kafka report %+v: want 4 partitions and no lag", rep.Kafka)
	}
	checkExactlyOnce(t, lake, topic, want)
	checkGroupOffsets(t, cl, opts.GroupID, topic, rep.Kafka.Lag)

	rep, err = runKafka(t, lake, opts)
	if err != nil || rep.Batches != 0 || rep.Rows != 0 {
		t.Fatalf("rerun: %+v, %v: want nothing", rep, err)
	}
	produce(t, cl, topic, 4, 500, rng, 25, 4096, want)
	rep, err = runKafka(t, lake, opts)
	if err != nil || rep.Lines != 500 {
		t.Fatalf("after 500 more: %+v, %v", rep, err)
	}
	checkExactlyOnce(t, lake, topic, want)
}

// checkGroupOffsets: the monitoring consumer group holds, for every partition, the next offset
// bronze will read, which is the end offset once ingest has caught up.
func checkGroupOffsets(t testing.TB, cl *kgo.Client, group, topic string, lag []kafka.PartitionLag) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err == nil {
		err = got.Error()
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	for _, l := range lag {
		o, ok := got.Lookup(topic, l.Partition)
		if !ok || o.At != l.End || l.Committed != l.End {
			t.Fatalf("group %s, partition %d: committed %+v (ok %v), want the end offset %d", group, l.Partition, o, ok, l.End)
		}
	}
}

// TestKafkaStartingOffsetsLatest: a first run with starting_offsets latest ingests nothing that
// was already in the topic, pins that position, and the next run takes what came after it.
func TestKafkaStartingOffsetsLatest(t *testing.T) {
	brokers := kafkaBrokers(t)
	topic := newTopic(t, brokers, 2)
	cl := kafkaClient(t, brokers)
	rng := rand.New(rand.NewPCG(3, 4))
	before := newProduced()
	produce(t, cl, topic, 2, 200, rng, 0, 0, before)
	lake := fileLake(t)
	opts := kafkaOptions(brokers, topic)
	opts.StartingOffsets = StartLatest
	rep, err := runKafka(t, lake, opts)
	if err != nil || rep.Rows != 0 || rep.Batches != 1 {
		t.Fatalf("first run: %+v, %v: want one empty batch pinning the end offsets", rep, err)
	}
	after := newProduced()
	produce(t, cl, topic, 2, 300, rng, 0, 0, after)
	if _, err := runKafka(t, lake, opts); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, lake, topic, after)
}

// TestKafkaNewPartitions: partitions added to the topic after a run are read from their start.
func TestKafkaNewPartitions(t *testing.T) {
	brokers := kafkaBrokers(t)
	topic := newTopic(t, brokers, 2)
	cl := kafkaClient(t, brokers)
	rng := rand.New(rand.NewPCG(5, 6))
	want := newProduced()
	produce(t, cl, topic, 2, 400, rng, 0, 0, want)
	lake := fileLake(t)
	opts := kafkaOptions(brokers, topic)
	if _, err := runKafka(t, lake, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreatePartitions(ctx, 2, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	// A new client sees the new partitions in its first metadata.
	produce(t, kafkaClient(t, brokers), topic, 4, 600, rng, 0, 0, want)
	newParts := 0
	for k := range want.valid {
		if strings.HasPrefix(k, "2@") || strings.HasPrefix(k, "3@") {
			newParts++
		}
	}
	if newParts == 0 {
		t.Fatal("no record went to the new partitions")
	}
	rep, err := runKafka(t, lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kafka.Partitions != 4 {
		t.Fatalf("partitions %d, want 4", rep.Kafka.Partitions)
	}
	checkExactlyOnce(t, lake, topic, want)
}

// TestKafkaRetentionDeleted: offsets deleted (as retention does) after the checkpoint's position
// and before they were read fail the run with ErrDataLoss naming the range; with
// fail_on_data_loss false they are skipped and counted, and everything else is ingested once.
func TestKafkaRetentionDeleted(t *testing.T) {
	brokers := kafkaBrokers(t)
	topic := newTopic(t, brokers, 1)
	cl := kafkaClient(t, brokers)
	rng := rand.New(rand.NewPCG(7, 8))
	first := newProduced()
	produce(t, cl, topic, 1, 100, rng, 0, 0, first)
	lake := fileLake(t)
	opts := kafkaOptions(brokers, topic)
	if _, err := runKafka(t, lake, opts); err != nil {
		t.Fatal(err)
	}
	rest := newProduced()
	produce(t, cl, topic, 1, 200, rng, 0, 0, rest) // offsets 100..299
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: topic, Partition: 0, At: 150})
	resp, err := kadm.NewClient(cl).DeleteRecords(ctx, del)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = runKafka(t, lake, opts)
	if !errors.Is(err, ErrDataLoss) || !strings.Contains(err.Error(), topic+"/0 offsets [100, 150)") {
		t.Fatalf("err = %v: want ErrDataLoss naming %s/0 offsets [100, 150)", err, topic)
	}
	opts.SkipDataLoss = true
	rep, err := runKafka(t, lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kafka.LostRecords != 50 || len(rep.Kafka.LostRanges) != 1 || rep.Kafka.LostRanges[0] != topic+"/0:[100,150)" || rep.Rows != 150 {
		t.Fatalf("report %+v / %+v: want 50 lost in [100,150) and 150 rows", rep, rep.Kafka)
	}
	want := newProduced()
	for k, v := range first.valid {
		want.valid[k] = v
	}
	for k, v := range rest.valid {
		var off int
		fmt.Sscanf(k, "0@%d", &off)
		if off >= 150 {
			want.valid[k] = v
		}
	}
	checkExactlyOnce(t, lake, topic, want)
}
