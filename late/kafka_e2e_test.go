package late

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
)

// TestKafkaPipelineInvariants: the harness's workload (lag, outages, duplicates, late resends,
// malformed lines) produced into a 4-partition topic, ingested from Kafka in batches, streamed
// and merged late: invariant A (records = bronze + ingest rejects; bronze = silver + validation
// rejects + duplicates) and invariant E hold as they do for a files landing.
func TestKafkaPipelineInvariants(t *testing.T) {
	brokers := os.Getenv("MEDALLION_TEST_KAFKA_BROKERS")
	if brokers == "" {
		if os.Getenv("MEDALLION_REQUIRE_KAFKA") == "1" || os.Getenv("CI") == "true" {
			t.Fatal("MEDALLION_TEST_KAFKA_BROKERS is not set: run under scripts/kafka.sh run --")
		}
		t.Skip("no Kafka broker: run under scripts/kafka.sh run --")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	topic := "e2e-" + time.Now().UTC().Format("150405.000000")
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	o := gen.DefaultOptions()
	o.Seed, o.Lines, o.Files, o.Rate = 4, 6000, 8, 200
	o.Columns = append(gen.DefaultColumns(), gen.Column{Name: "device_id", Kind: "string"}, gen.Column{Name: "qty", Kind: "long"})
	o.Devices, o.EventTypes = 3, 3
	o.DuplicateFraction, o.LateResendFraction = 0.03, 0.3
	o.MalformedFraction, o.WrongTypeFraction, o.FutureFraction = 0.002, 0.005, 0.002
	o.OutageRate, o.OutageDuration = 0.002, 30*time.Second
	o.LagMedian, o.TailFraction, o.TailScale = 2*time.Second, 0.05, 10*time.Second
	st, ks, err := gen.GenerateKafka(ctx, gen.KafkaTarget{Client: cl, Topic: topic}, o)
	if err != nil {
		t.Fatal(err)
	}
	if !ks.CreatedTopic || ks.Partitions != 4 || ks.Records != st.Lines || st.Malformed == 0 || st.Duplicates == 0 {
		t.Fatalf("workload: %+v %+v", ks, st)
	}

	lake := mem.New()
	cfg := testConfig(t, "")
	x, err := bronze.NewKafkaIngester(lake, bronze.KafkaOptions{
		Brokers: strings.Split(brokers, ","), Topics: []string{topic}, MaxRecordsPerTrigger: 1000,
		Declared: declared(cfg), BronzePath: cfg.Tables.Bronze, RejectsPath: cfg.Tables.Rejects,
		CheckpointPath: "_checkpoints/ingest/kafka", FlushRows: 400, Clock: ingestClock,
	})
	if err != nil {
		t.Fatal(err)
	}
	irep, err := x.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srep := runStream(t, lake, cfg)

	// Invariant A, from the tables and the workload's own count of its lines.
	bronzeRows := countRows(t, lake, cfg.Tables.Bronze)
	rejects := countRows(t, lake, cfg.Tables.Rejects) // ingest and validation rejects
	if bronzeRows+irep.Rejected != st.Lines || irep.Lines != st.Lines {
		t.Fatalf("invariant A: %d records produced != bronze %d + ingest rejects %d", st.Lines, bronzeRows, irep.Rejected)
	}
	if irep.Rejected < st.Malformed {
		t.Fatalf("ingest rejected %d records, the workload has %d malformed", irep.Rejected, st.Malformed)
	}
	if rejects != irep.Rejected+srep.Rejected {
		t.Fatalf("rejects table %d rows != ingest %d + validation %d", rejects, irep.Rejected, srep.Rejected)
	}
	silverRows := countRows(t, lake, cfg.Tables.Silver)
	if bronzeRows != silverRows+srep.Rejected+srep.Duplicates || srep.Duplicates == 0 {
		t.Fatalf("invariant A: bronze %d != silver %d + validation rejects %d + duplicates %d", bronzeRows, silverRows, srep.Rejected, srep.Duplicates)
	}
	var quarantined int64
	for _, g := range srep.Gold {
		quarantined += g.LateRows
	}
	if quarantined == 0 {
		t.Fatal("no late rows: the workload does not exercise merge-late")
	}
	if _, err := MergeLate(ctx, opts(lake, cfg)); err != nil {
		t.Fatal(err)
	}
	checkInvariantE(t, lake, srep.WatermarkMs)
}

func countRows(t testing.TB, lake objstore.Bucket, path string) int64 {
	t.Helper()
	var n int64
	for b, err := range table.Open(objstore.WithPrefix(lake, path), table.Options{}).Scan(context.Background(), table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n += int64(b.Len())
	}
	return n
}
