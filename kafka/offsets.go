package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/internal/backoff"
)

// The failures a reader must tell apart from a broker that is merely slow.
var (
	// ErrDataLoss: offsets a reader expected to read are no longer in the topic (retention
	// deleted them, or the topic was recreated).
	ErrDataLoss = errors.New("kafka offsets lost")
	// ErrStalled: a read or an offsets request made no progress for the caller's patience (the
	// broker is down or unreachable); franz-go retries forever, so readers have a deadline.
	ErrStalled = errors.New("kafka read made no progress")
	// ErrNoTopic: the brokers do not know the topic (or it has no partitions); retrying cannot
	// help.
	ErrNoTopic = errors.New("no such topic")
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Less orders partitions by topic, then partition number.
func (p TopicPartition) Less(o TopicPartition) bool {
	if p.Topic != o.Topic {
		return p.Topic < o.Topic
	}
	return p.Partition < o.Partition
}

// Range is the offsets [From, To) of one partition. Its JSON is part of bronze's Kafka ingest
// checkpoint: do not rename its fields.
type Range struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
}

// TopicPartition is the partition the range is of.
func (r Range) TopicPartition() TopicPartition { return TopicPartition{r.Topic, r.Partition} }

func (r Range) String() string {
	return fmt.Sprintf("%s/%d:[%d,%d)", r.Topic, r.Partition, r.From, r.To)
}

// ListOffsets returns the start and end offset of every partition of the topics. A topic the
// brokers do not know fails with ErrNoTopic.
func ListOffsets(ctx context.Context, cl *kgo.Client, topics []string) (starts, ends map[TopicPartition]int64, err error) {
	adm := kadm.NewClient(cl)
	starts, ends = map[TopicPartition]int64{}, map[TopicPartition]int64{}
	for _, which := range []struct {
		list func(context.Context, ...string) (kadm.ListedOffsets, error)
		into map[TopicPartition]int64
		name string
	}{{adm.ListStartOffsets, starts, "start"}, {adm.ListEndOffsets, ends, "end"}} {
		lo, err := which.list(ctx, topics...)
		if err != nil {
			return nil, nil, fmt.Errorf("kafka: list %s offsets of %v: %w", which.name, topics, err)
		}
		var errs []error
		lo.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
					errs = append(errs, fmt.Errorf("kafka: topic %q does not exist: %w: %w", o.Topic, ErrNoTopic, o.Err))
				} else {
					errs = append(errs, fmt.Errorf("kafka: %s offset of %s/%d: %w", which.name, o.Topic, o.Partition, o.Err))
				}
				return
			}
			which.into[TopicPartition{o.Topic, o.Partition}] = o.Offset
		})
		if err := errors.Join(errs...); err != nil {
			return nil, nil, err
		}
	}
	for _, t := range topics {
		found := false
		for k := range ends {
			if k.Topic == t {
				found = true
				break
			}
		}
		if !found {
			return nil, nil, fmt.Errorf("kafka: topic %q does not exist (or has no partitions): %w", t, ErrNoTopic)
		}
	}
	return starts, ends, nil
}

// ListOffsetsRetrying is ListOffsets retried while the brokers cannot be reached (a broker
// restart refuses connections for 10-20 s), for up to patience, then ErrStalled; a missing topic
// fails at once. log hears about the retries.
func ListOffsetsRetrying(ctx context.Context, cl *kgo.Client, topics []string, patience time.Duration, log *slog.Logger) (starts, ends map[TopicPartition]int64, err error) {
	deadline := time.Now().Add(patience)
	wait := backoff.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	for attempt := 1; ; attempt++ {
		starts, ends, err = ListOffsets(ctx, cl, topics)
		if err == nil || errors.Is(err, ErrNoTopic) || ctx.Err() != nil {
			return starts, ends, err
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("%w for %s: %w", ErrStalled, patience, err)
		}
		if attempt == 1 || attempt%10 == 0 {
			log.Warn("kafka brokers do not answer; retrying", "err", err, "attempt", attempt)
		}
		if err := wait.Sleep(ctx, attempt); err != nil {
			return nil, nil, err
		}
	}
}

// RangeReaderOptions are the client options ReadRange needs: an offset that is gone fails the
// read (NoResetOffset) and never silently jumps; the control records (transaction markers) are
// kept, so that a range ending on one is seen to end (they are not handed on).
func RangeReaderOptions() []kgo.Opt {
	return []kgo.Opt{kgo.ConsumeResetOffset(kgo.NoResetOffset()), kgo.KeepControlRecords(), kgo.FetchMaxWait(500 * time.Millisecond)}
}

// ReadRange consumes partition r from r.From until it has seen offset r.To-1, handing each
// record that is not a control record to each, in offset order; the first error of each ends
// the read. cl is made with RangeReaderOptions and consumes nothing else meanwhile. An offset
// that is gone fails with ErrDataLoss; no record for stall fails with ErrStalled.
func ReadRange(ctx context.Context, cl *kgo.Client, r Range, stall time.Duration, each func(*kgo.Record) error) error {
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{r.Topic: {r.Partition: kgo.NewOffset().At(r.From)}})
	defer cl.RemoveConsumePartitions(map[string][]int32{r.Topic: {r.Partition}})
	next := r.From
	lastProgress := time.Now()
	for next < r.To {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if errors.Is(err, kerr.OffsetOutOfRange) {
				err = fmt.Errorf("%w: %w", ErrDataLoss, err)
			}
			ferr = errors.Join(ferr, fmt.Errorf("kafka: read %s/%d at offset %d: %w", t, p, next, err))
		})
		if ferr != nil {
			return ferr
		}
		progressed := false
		var derr error
		fs.EachRecord(func(rec *kgo.Record) {
			if derr != nil || rec.Topic != r.Topic || rec.Partition != r.Partition || rec.Offset < next || rec.Offset >= r.To {
				return
			}
			next = rec.Offset + 1
			progressed = true
			if rec.Attrs.IsControl() {
				return
			}
			derr = each(rec)
		})
		if derr != nil {
			return derr
		}
		if progressed {
			lastProgress = time.Now()
		} else if time.Since(lastProgress) > stall {
			return fmt.Errorf("kafka: %s/%d: no record for %s at offset %d (want up to %d): %w",
				r.Topic, r.Partition, stall, next, r.To, ErrStalled)
		}
	}
	return nil
}
