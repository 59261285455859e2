package bronze

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// cpuSeconds is this process's user+system CPU time: on a 2-core machine shared with the broker,
// wall time alone says little.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// BenchmarkKafkaIngest measures Kafka -> bronze (fetch, decode, Parquet encode, commit to a
// memory lake) over the generated workload in a 4-partition topic of the test broker, with one
// worker and with one per core: records/s of wall time, and CPU seconds of this process per
// million records (the broker, on the same machine, is not counted).
func BenchmarkKafkaIngest(b *testing.B) {
	const lines = 400_000
	brokers := kafkaBrokers(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	topic := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	o := gen.DefaultOptions()
	o.Lines, o.Files = lines, 8
	st, _, err := gen.GenerateKafka(ctx, gen.KafkaTarget{Client: cl, Topic: topic}, o)
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(st.Bytes)
			b.ReportAllocs()
			var cpu float64
			for b.Loop() {
				opts := kafkaOptions(brokers, topic)
				opts.Limits = Limits{}
				opts.FlushRows, opts.Workers = 1<<16, workers
				x, err := NewKafkaIngester(mem.New(), opts)
				if err != nil {
					b.Fatal(err)
				}
				c0 := cpuSeconds()
				rep, err := x.Run(ctx)
				cpu += cpuSeconds() - c0
				if err != nil || rep.Lines != lines {
					b.Fatalf("%+v %v", rep, err)
				}
			}
			b.ReportMetric(float64(b.N)*lines/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(cpu/float64(b.N)/lines*1e6, "cpu-s/Mrecords")
		})
	}
}
