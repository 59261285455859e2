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

// TopicConfig is one config of an existing topic, "" when the broker has none for it.
func TopicConfig(ctx context.Context, cl *kgo.Client, topic, name string) (string, error) {
	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("kafka: describe the configs of topic %s: %w", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return "", fmt.Errorf("kafka: describe the configs of topic %s: %w", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue(), nil
		}
	}
	return "", nil
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
