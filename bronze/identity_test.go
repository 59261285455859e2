package bronze

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ingestedLake lands 7 objects and ingests them in 3 batches; it returns the lake and the
// oracle of every non-blank line.
func ingestedLake(t *testing.T) (*mem.Bucket, map[string]bool) {
	t.Helper()
	lake := mem.New()
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[string]bool{}
	for i := range 7 {
		maps.Copy(want, landingObject(t, lake, rng, fmt.Sprintf("landing/events/%03d.json", i), 40+rng.IntN(80)))
	}
	x, err := NewIngester(lake, ingestOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameSet(t, tableLines(t, lake), want)
	return lake, want
}

// dropLastLogEntry deletes the latest _delta_log entry of the table at path, as a manual
// "fix" of a torn commit or a restore from an older backup leaves it.
func dropLastLogEntry(t *testing.T, lake objstore.Bucket, path string) {
	t.Helper()
	ctx := context.Background()
	b := objstore.WithPrefix(lake, path)
	snap, err := table.Open(b, table.Options{}).Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, txlog.CommitKey(snap.Version())); err != nil {
		t.Fatal(err)
	}
	_ = b.Delete(ctx, txlog.LogDir+"_last_checkpoint")
}

func objectSizes(t *testing.T, lake objstore.Bucket) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for info, err := range lake.List(context.Background(), "", objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		out[info.Key] = info.Size
	}
	return out
}

// TestIngestRefusesTableBehind is reproduction 3 of issue 30 for the ingest: with bronze's
// (or rejects') last _delta_log entry deleted, ingest used to report ok while its checkpoint
// still called the batch committed, so its rows were never written again. It must refuse
// with the lake unchanged, and after Rollback a rerun must put every line back exactly once.
func TestIngestRefusesTableBehind(t *testing.T) {
	ctx := context.Background()
	for _, path := range []string{"bronze/events", "bronze/rejects"} {
		t.Run(path, func(t *testing.T) {
			lake, want := ingestedLake(t)
			dropLastLogEntry(t, lake, path)
			before := objectSizes(t, lake)
			x, err := NewIngester(lake, ingestOptions())
			if err != nil {
				t.Fatal(err)
			}
			_, err = x.Run(ctx)
			if !errors.Is(err, ErrTableBehind) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "rollback") {
				t.Fatalf("ingest with %s behind: %v, want ErrTableBehind naming it and the rollback", path, err)
			}
			if !maps.Equal(before, objectSizes(t, lake)) {
				t.Fatal("the refused run changed the lake")
			}
			rb, err := x.Rollback(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := rb.Behind[path]; !ok || rb.To != rb.From-1 {
				t.Fatalf("rollback %+v: want %s behind by one batch", rb, path)
			}
			if _, err := x.Run(ctx); err != nil {
				t.Fatal(err)
			}
			sameSet(t, tableLines(t, lake), want)
			if _, err := x.Run(ctx); err != nil {
				t.Fatalf("a run after the recovery: %v", err)
			}
		})
	}
}

// TestIngestRefusesLostID: metadata.json deleted while batches and commits remain must not
// become a new id (every object would be ingested again); RecoverID puts it back from the
// tables' txn, and a rerun adds nothing.
func TestIngestRefusesLostID(t *testing.T) {
	ctx := context.Background()
	lake, want := ingestedLake(t)
	ck := objstore.WithPrefix(lake, "_checkpoints/ingest")
	old, err := objstore.ReadAll(ctx, ck, "metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := ck.Delete(ctx, "metadata.json"); err != nil {
		t.Fatal(err)
	}
	before := objectSizes(t, lake)
	x, err := NewIngester(lake, ingestOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Run(ctx); !errors.Is(err, ErrQueryIDLost) || !strings.Contains(err.Error(), "query-id") {
		t.Fatalf("ingest without metadata.json: %v, want ErrQueryIDLost with the recovery", err)
	}
	if !maps.Equal(before, objectSizes(t, lake)) {
		t.Fatal("the refused run changed the lake")
	}
	if _, err := x.RecoverID(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := objstore.ReadAll(ctx, ck, "metadata.json")
	if err != nil || !strings.Contains(string(old), strings.Trim(strings.TrimPrefix(string(got), `{"id":`), `"}`)) {
		t.Fatalf("recovered metadata.json %s (%v), want the id of %s", got, err, old)
	}
	if rep, err := x.Run(ctx); err != nil || rep.Files != 0 {
		t.Fatalf("run after recover-id: %+v %v, want nothing new", rep, err)
	}
	sameSet(t, tableLines(t, lake), want)
}

// TestIngestRefusesANewCheckpointOverAnotherIngestsBronze: the whole ingest checkpoint gone
// (deleted, or stream.checkpoint pointed somewhere new) while bronze holds its batches. A new
// id would write every landing object into bronze a second time; the run is refused with the
// lake unchanged, and the old checkpoint back makes the next run add nothing.
func TestIngestRefusesANewCheckpointOverAnotherIngestsBronze(t *testing.T) {
	ctx := context.Background()
	lake, want := ingestedLake(t)
	before := objectSizes(t, lake)
	opts := ingestOptions()
	opts.CheckpointPath = "_checkpoints/ingest2"
	x, err := NewIngester(lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = x.Run(ctx)
	if !errors.Is(err, ErrTableBehind) || !strings.Contains(err.Error(), "bronze/events holds the batches of another ingest") {
		t.Fatalf("ingest on a new checkpoint: %v, want a refusal naming bronze/events", err)
	}
	for k, size := range objectSizes(t, lake) {
		if _, ok := before[k]; !ok && !strings.HasPrefix(k, "_checkpoints/ingest2/") {
			t.Errorf("the refused run wrote %s (%d bytes)", k, size)
		}
	}
	x, err = NewIngester(lake, ingestOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := x.Run(ctx); err != nil || rep.Files != 0 {
		t.Fatalf("run on the old checkpoint: %+v %v, want nothing new", rep, err)
	}
	sameSet(t, tableLines(t, lake), want)
}

// TestKafkaIngestRefusesTableBehind: the Kafka ingest has the same checks as the file ingest
// (reproduction 3 on a Kafka landing): bronze's last commit deleted is refused, and the
// rollback re-reads the lost batch's offset ranges into bronze, every record exactly once.
// A lost metadata.json is refused and recovered from the tables' txn.
func TestKafkaIngestRefusesTableBehind(t *testing.T) {
	ctx := context.Background()
	brokers := kafkaBrokers(t)
	topic := newTopic(t, brokers, 2)
	cl := kafkaClient(t, brokers)
	want := newProduced()
	produce(t, cl, topic, 2, 1200, rand.New(rand.NewPCG(5, 6)), 25, 4096, want)
	lake := fileLake(t)
	opts := kafkaOptions(brokers, topic)
	opts.MaxRecordsPerTrigger = 500
	if _, err := runKafka(t, lake, opts); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, lake, topic, want)

	dropLastLogEntry(t, lake, "bronze/events")
	before := objectSizes(t, lake)
	if _, err := runKafka(t, lake, opts); !errors.Is(err, ErrTableBehind) || !strings.Contains(err.Error(), "kafka ingest checkpoint") {
		t.Fatalf("kafka ingest with bronze behind: %v, want ErrTableBehind naming the checkpoint", err)
	}
	if !maps.Equal(before, objectSizes(t, lake)) {
		t.Fatal("the refused run changed the lake")
	}
	x, err := NewKafkaIngester(lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rb, err := x.Rollback(ctx); err != nil || rb.To != rb.From-1 {
		t.Fatalf("rollback: %+v %v, want one batch", rb, err)
	}
	if _, err := runKafka(t, lake, opts); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, lake, topic, want)

	ck := objstore.WithPrefix(lake, opts.CheckpointPath)
	if err := ck.Delete(ctx, "metadata.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := runKafka(t, lake, opts); !errors.Is(err, ErrQueryIDLost) {
		t.Fatalf("kafka ingest without metadata.json: %v, want ErrQueryIDLost", err)
	}
	if _, err := x.RecoverID(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := runKafka(t, lake, opts); err != nil || rep.Lines != 0 {
		t.Fatalf("after recover-id: %+v %v, want nothing new", rep, err)
	}
	checkExactlyOnce(t, lake, topic, want)
}
