package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/kafka"
)

// KafkaTarget is the topic GenerateKafka produces into.
type KafkaTarget struct {
	// Client is the caller's franz-go client (its brokers, TLS and SASL), made with
	// kgo.RecordPartitioner(kgo.ManualPartitioner()): GenerateKafka names each record's partition.
	Client *kgo.Client
	Topic  string
	// Partitions is the partition count of a topic GenerateKafka creates; default 4. An existing
	// topic keeps its own.
	Partitions int32
}

// KafkaStats is what GenerateKafka did beyond the workload's Stats.
type KafkaStats struct {
	Topic        string `json:"topic"`
	Partitions   int32  `json:"partitions"`
	CreatedTopic bool   `json:"created_topic"`
	Records      int64  `json:"records"`
}

// GenerateKafka produces the workload of opts into a topic, one record per line (CSV: per record,
// without the header; the declared columns in order), in arrival order, line i of the run to
// partition i mod P, with no key. The topic is created when it does not exist. Unlike Generate,
// a rerun produces the records again: Kafka appends, and the duplicates are the stream's to drop.
func GenerateKafka(ctx context.Context, t KafkaTarget, opts Options) (Stats, KafkaStats, error) {
	ks := KafkaStats{Topic: t.Topic}
	if t.Client == nil || t.Topic == "" {
		return Stats{}, ks, errors.New("gen: kafka: a client and a topic are required")
	}
	if opts.Gzip {
		return Stats{}, ks, errors.New("gen: kafka: gzip applies to landing objects; Kafka compresses record batches itself")
	}
	g, err := New(opts)
	if err != nil {
		return Stats{}, ks, err
	}
	if t.Partitions <= 0 {
		t.Partitions = 4
	}
	parts, created, err := kafka.EnsureTopic(ctx, t.Client, t.Topic, t.Partitions)
	if err != nil {
		return Stats{}, ks, fmt.Errorf("gen: %w", err)
	}
	ks.Partitions, ks.CreatedTopic = parts, created
	prod := kafka.NewProducer(t.Client)
	var line int64
	for g.More() {
		if err := ctx.Err(); err != nil {
			return g.Stats(), ks, fmt.Errorf("gen: %w", err)
		}
		// Each file's bytes are the records' values until they are acknowledged: a fresh slice
		// per file, not a reused buffer.
		_, data := g.NextFile(nil)
		first := g.csv
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				i = len(data) - 1
			}
			rec := data[:i+1]
			data = data[i+1:]
			if first {
				first = false // the CSV header
				continue
			}
			rec = bytes.TrimRight(rec, "\r\n")
			prod.Produce(ctx, &kgo.Record{Topic: t.Topic, Partition: int32(line % int64(parts)), Value: rec})
			line++
			ks.Records++
		}
		if prod.Err() != nil {
			break
		}
		if opts.Progress != nil {
			opts.Progress(g.stats.Lines)
		}
	}
	if err := prod.Wait(); err != nil {
		return g.Stats(), ks, fmt.Errorf("gen: kafka: produce to %s: %w", t.Topic, err)
	}
	return g.Stats(), ks, nil
}
