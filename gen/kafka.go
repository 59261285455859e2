package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
	parts, created, err := ensureTopic(ctx, kadm.NewClient(t.Client), t.Topic, t.Partitions)
	if err != nil {
		return Stats{}, ks, err
	}
	ks.Partitions, ks.CreatedTopic = parts, created
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
		wg.Done()
	}
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
			wg.Add(1)
			t.Client.Produce(ctx, &kgo.Record{Topic: t.Topic, Partition: int32(line % int64(parts)), Value: rec}, done)
			line++
			ks.Records++
		}
		mu.Lock()
		err := firstErr
		mu.Unlock()
		if err != nil {
			break
		}
		if opts.Progress != nil {
			opts.Progress(g.stats.Lines)
		}
	}
	wg.Wait()
	if firstErr != nil {
		return g.Stats(), ks, fmt.Errorf("gen: kafka: produce to %s: %w", t.Topic, firstErr)
	}
	return g.Stats(), ks, nil
}

// ensureTopic creates the topic with parts partitions unless it exists, and returns its
// partition count.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, parts int32) (int32, bool, error) {
	resp, err := adm.CreateTopic(ctx, parts, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil {
		return parts, true, nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, false, fmt.Errorf("gen: kafka: create topic %s: %w", topic, err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, false, fmt.Errorf("gen: kafka: describe topic %s: %w", topic, err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return 0, false, fmt.Errorf("gen: kafka: topic %s exists but has no readable partitions (%v)", topic, d.Err)
	}
	return int32(len(d.Partitions)), false, nil
}
