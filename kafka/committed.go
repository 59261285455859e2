package kafka

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
