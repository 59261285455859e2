package kafka

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/internal/backoff"
)

// ReadCommitted hands each record of every partition of topic to each, partition by partition
// in offset order, from the partition's start to its last stable offset (the end a reader in
// read_committed isolation sees), as a consumer in read_committed isolation sees them: records
// of aborted transactions are never handed on, nor control records. It is how a compacted
// changelog is read back whole; the sinks' tests check a topic with it.
func ReadCommitted(ctx context.Context, conn Conn, topic string, stall time.Duration, each func(*kgo.Record) error) error {
	cl, err := conn.NewClient(append(RangeReaderOptions(), kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: start offsets of %s: %w", topic, err)
	}
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = stable.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: last stable offsets of %s: %w", topic, err)
	}
	var ranges []Range
	stable.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(o.Topic, o.Partition); ok && s.Offset < o.Offset {
			ranges = append(ranges, Range{Topic: topic, Partition: o.Partition, From: s.Offset, To: o.Offset})
		}
	})
	if len(stable) == 0 {
		return fmt.Errorf("kafka: topic %q: %w", topic, ErrNoTopic)
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Partition < ranges[j].Partition })
	for _, r := range ranges {
		if err := ReadRange(ctx, cl, r, stall, each); err != nil {
			return err
		}
	}
	return nil
}

// WaitStable waits until no transaction is open on any partition of topic (each partition's
// last stable offset is its end), for up to patience, then fails with ErrStalled. A committed
// transaction's records become visible to read_committed readers only once the broker has
// written its markers, shortly after the commit returned: a reader that must see every
// transaction committed so far (a test comparing the topic with its table) waits for this.
func WaitStable(ctx context.Context, conn Conn, topic string, patience time.Duration) error {
	cl, err := conn.NewClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	wait := backoff.Backoff{Min: 20 * time.Millisecond, Max: 500 * time.Millisecond}
	deadline := time.Now().Add(patience)
	for attempt := 1; ; attempt++ {
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = stable.Error()
		}
		var ends kadm.ListedOffsets
		if err == nil {
			ends, err = adm.ListEndOffsets(ctx, topic)
		}
		if err == nil {
			err = ends.Error()
		}
		open := 0
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if s, ok := stable.Lookup(o.Topic, o.Partition); !ok || s.Offset != o.Offset {
					open++
				}
			})
			if open == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kafka: topic %s: %d partitions with an open transaction after %s (%v): %w", topic, open, patience, err, ErrStalled)
		}
		if serr := wait.Sleep(ctx, attempt); serr != nil {
			return serr
		}
	}
}
