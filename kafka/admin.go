package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnsureTopic creates the topic with parts partitions (the brokers' default replication) unless
// it exists, and returns its partition count and whether this call created it. An existing topic
// keeps its own partition count.
func EnsureTopic(ctx context.Context, cl *kgo.Client, topic string, parts int32) (int32, bool, error) {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, parts, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil {
		return parts, true, nil
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, false, fmt.Errorf("kafka: create topic %s: %w", topic, err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, false, fmt.Errorf("kafka: describe topic %s: %w", topic, err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return 0, false, fmt.Errorf("kafka: topic %s exists but has no readable partitions (%v)", topic, d.Err)
	}
	return int32(len(d.Partitions)), false, nil
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
