package watch

import (
	"context"
	"os"
	"testing"

	"github.com/minio/minio-go/v7/pkg/notification"

	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

// Targets of the test server (scripts/minio.sh): ours, and another team's.
const (
	ourARN   = "arn:minio:sqs::PRIMARY:webhook"
	otherARN = "arn:minio:sqs::OTHERTEAM:webhook"
)

func rule(t *testing.T, arn, prefix string, events ...notification.EventType) notification.QueueConfig {
	t.Helper()
	a, err := notification.NewArnFromString(arn)
	if err != nil {
		t.Fatal(err)
	}
	c := notification.NewConfig(a)
	c.AddEvents(events...)
	if prefix != "" {
		c.AddFilterPrefix(prefix)
	}
	return notification.QueueConfig{Config: c, Queue: a.String()}
}

// rules renders a configuration's queue rules as "arn prefix events" strings.
func rules(cfg notification.Configuration) map[string]int {
	out := map[string]int{}
	for _, q := range cfg.QueueConfigs {
		k := q.Queue + " " + rulePrefix(q.Config)
		for _, e := range q.Events {
			k += " " + string(e)
		}
		out[k]++
	}
	return out
}

// TestSubscribeKeepsOtherRules (real MinIO): subscribing reads the bucket's notification
// configuration and changes only our rule. Another team's rule (another target) and our target's
// rule for another prefix survive; a stale rule of ours for the same prefix is replaced, not
// duplicated; subscribing again changes nothing. Before, Subscribe replaced the whole
// configuration and erased the other rules.
func TestSubscribeKeepsOtherRules(t *testing.T) {
	b := s3test.NewTestBucket(t)
	m := MinIO{Endpoint: os.Getenv(s3test.EndpointEnv), AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	ctx := context.Background()
	client, err := m.client()
	if err != nil {
		t.Fatal(err)
	}
	var foreign notification.Configuration
	foreign.QueueConfigs = []notification.QueueConfig{
		rule(t, otherARN, "reports/", notification.ObjectCreatedAll, notification.ObjectRemovedAll),
		rule(t, ourARN, "other-pipeline/", notification.ObjectCreatedAll),
		rule(t, ourARN, "lake/landing/events/", notification.ObjectCreatedPut), // stale: ours, Put only
	}
	if err := client.SetBucketNotification(ctx, b.Name(), foreign); err != nil {
		t.Fatalf("set the other rules (is the server started by scripts/minio.sh, with the OTHERTEAM target?): %v", err)
	}
	want := map[string]int{
		otherARN + " reports/ s3:ObjectCreated:* s3:ObjectRemoved:*": 1,
		ourARN + " other-pipeline/ s3:ObjectCreated:*":               1,
		ourARN + " lake/landing/events/ s3:ObjectCreated:*":          1,
	}
	for i := 0; i < 2; i++ {
		if err := Subscribe(ctx, m, b.Name(), "lake/landing/events/", ourARN); err != nil {
			t.Fatal(err)
		}
		got, err := client.GetBucketNotification(ctx, b.Name())
		if err != nil {
			t.Fatal(err)
		}
		if r := rules(got); len(r) != len(want) || r[otherARN+" reports/ s3:ObjectCreated:* s3:ObjectRemoved:*"] != 1 ||
			r[ourARN+" other-pipeline/ s3:ObjectCreated:*"] != 1 || r[ourARN+" lake/landing/events/ s3:ObjectCreated:*"] != 1 {
			t.Fatalf("subscribe #%d: rules %v, want %v", i+1, r, want)
		}
	}
}

// TestWithRule: the merge on its own, including a configuration with no rule at all.
func TestWithRule(t *testing.T) {
	a, _ := notification.NewArnFromString(ourARN)
	got, changed := withRule(notification.Configuration{}, a, "p/")
	if !changed || len(got.QueueConfigs) != 1 || rulePrefix(got.QueueConfigs[0].Config) != "p/" {
		t.Fatalf("empty configuration: %+v %v", got, changed)
	}
	if _, changed := withRule(got, a, "p/"); changed {
		t.Fatal("our rule already there: nothing should change")
	}
	dup := got
	dup.QueueConfigs = append(append([]notification.QueueConfig{}, got.QueueConfigs...), got.QueueConfigs...)
	if merged, changed := withRule(dup, a, "p/"); !changed || len(merged.QueueConfigs) != 1 {
		t.Fatalf("our rule twice: %+v %v, want it once", merged, changed)
	}
}
