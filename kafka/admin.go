package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/internal/backoff"
)

// EnsureTopic creates the topic with parts partitions (the brokers' default replication) unless
// it exists, and returns its partition count and whether this call created it. An existing topic
// keeps its own partition count.
func EnsureTopic(ctx context.Context, cl *kgo.Client, topic string, parts int32) (int32, bool, error) {
	return EnsureTopicWith(ctx, cl, topic, parts, nil)
}

// EnsureTopicWith is EnsureTopic that creates the topic with the topic configs (such as
// cleanup.policy=compact); an existing topic keeps its own.
func EnsureTopicWith(ctx context.Context, cl *kgo.Client, topic string, parts int32, configs map[string]*string) (int32, bool, error) {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, parts, -1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil {
		return parts, true, nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, false, fmt.Errorf("kafka: create topic %s: %w", topic, err)
	}
	var parts0 int32
	err = whileRetriable(ctx, func() error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return fmt.Errorf("kafka: describe topic %s: %w", topic, err)
		}
		d, ok := td[topic]
		if !ok || d.Err != nil || len(d.Partitions) == 0 {
			why := d.Err
			if why == nil {
				why = kerr.UnknownTopicOrPartition // not listed yet: retriable
			}
			return fmt.Errorf("kafka: topic %s exists but has no readable partitions: %w", topic, why)
		}
		parts0 = int32(len(d.Partitions))
		return nil
	})
	return parts0, false, err
}

// whileRetriable runs f again while it fails with a retriable Kafka error, for up to 30 s: a
// topic just created is unknown for a moment to the brokers that have not yet seen its
// metadata (KRaft spreads it after CreateTopics answers).
func whileRetriable(ctx context.Context, f func() error) error {
	wait := backoff.Backoff{Min: 50 * time.Millisecond, Max: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			return err
		}
		if serr := wait.Sleep(ctx, attempt); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// TopicConfig is one config of an existing topic, "" when the broker has none for it.
func TopicConfig(ctx context.Context, cl *kgo.Client, topic, name string) (string, error) {
	var value string
	err := whileRetriable(ctx, func() error {
		rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return fmt.Errorf("kafka: describe the configs of topic %s: %w", topic, err)
		}
		rc, err := rcs.On(topic, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			return fmt.Errorf("kafka: describe the configs of topic %s: %w", topic, err)
		}
		for _, c := range rc.Configs {
			if c.Key == name {
				value = c.MaybeValue()
			}
		}
		return nil
	})
	return value, err
}

// CommitGroupOffsets commits the end of each range as the consumer group's offset of its
// partition: what the usual Kafka tools (kafka-consumer-groups, Burrow) show the lag from.
func CommitGroupOffsets(ctx context.Context, cl *kgo.Client, group string, ranges []Range) error {
	var offs kadm.Offsets
	for _, r := range ranges {
		offs.Add(kadm.Offset{Topic: r.Topic, Partition: r.Partition, At: r.To, LeaderEpoch: -1})
	}
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: commit offsets of group %s: %w", group, err)
	}
	return nil
}
