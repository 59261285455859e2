// Package watch turns S3 event notifications into landing keys to ingest: it parses the event
// JSON that AWS S3 and MinIO webhook targets send, and subscribes a MinIO bucket to a webhook
// target with minio-go (the only place minio-go is used: the data path is aws-sdk-go-v2).
//
// Notifications are a hint, never the record of truth: a lost event only delays ingestion
// until the next reconciling listing, and a repeated event is harmless because ingestion is
// exactly once. Nothing here keeps state, so a crash loses nothing.
package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/notification"
)

// ErrBadEvent reports a notification body that is not S3 event JSON.
var ErrBadEvent = errors.New("watch: not an S3 event notification")

// Object is one created object named by a notification.
type Object struct {
	Bucket string
	Key    string // decoded
	Size   int64
	Event  string // e.g. s3:ObjectCreated:Put or ObjectCreated:Put
}

// ParseEvent reads an S3 event notification (`{"Records":[{"eventName":...,"s3":{"bucket":
// {"name":...},"object":{"key":...,"size":...}}}]}`) and returns the created objects. Keys arrive
// URL-encoded ('+' for a space, as AWS sends them); they are decoded once. Removal and other
// events are skipped. A test event (AWS sends one when a subscription is made) yields nothing.
// A record whose key does not decode fails the whole body; ParseEventRecords skips it instead.
func ParseEvent(body []byte) ([]Object, error) {
	objs, bad, err := ParseEventRecords(body)
	if err == nil && len(bad) > 0 {
		err = bad[0]
	}
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// ParseEventRecords is ParseEvent that keeps going past a bad record. It also reads the same
// event inside an SNS HTTPS delivery (Type Notification, the event in Message) and an
// EventBridge "Object Created" event (source aws.s3, one object in detail), the two ways AWS
// delivers S3 events to an HTTPS endpoint.
//
// ParseEventRecords keeps going past a bad record: the created objects of
// the good records, and an error (wrapping ErrBadEvent) for each bad one, so that one bad key
// does not hold back the others of the same notification. err is for a body that is not an
// event notification at all.
func ParseEventRecords(body []byte) (objs []Object, bad []error, err error) {
	return parseEventRecords(body, true)
}

// s3Ref is the bucket and object an event names: the same JSON in an S3 event record ("s3")
// and in an EventBridge event ("detail").
type s3Ref struct {
	Bucket struct {
		Name string `json:"name"`
	} `json:"bucket"`
	Object struct {
		Key  string `json:"key"`
		Size int64  `json:"size"`
	} `json:"object"`
}

// parseEventRecords parses one notification; envelope says whether an SNS envelope may wrap it
// (once: an envelope inside an envelope is not something AWS sends).
func parseEventRecords(body []byte, envelope bool) (objs []Object, bad []error, err error) {
	var ev struct {
		Records []struct {
			EventName string `json:"eventName"`
			S3        s3Ref  `json:"s3"`
		} `json:"Records"`
		Event string `json:"Event"` // "s3:TestEvent"
		// An SNS HTTPS delivery wraps the S3 event, as a string, in Message.
		Type         string `json:"Type"`
		Message      string `json:"Message"`
		SubscribeURL string `json:"SubscribeURL"`
		// An EventBridge event (an API destination) has one object in detail.
		DetailType string `json:"detail-type"`
		Source     string `json:"source"`
		Detail     s3Ref  `json:"detail"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	switch {
	case envelope && ev.Type == "Notification" && ev.Message != "":
		return parseEventRecords([]byte(ev.Message), false)
	case ev.Type == "SubscriptionConfirmation":
		// Confirming means fetching a URL the request names: an operator does that, not us.
		return nil, nil, fmt.Errorf("%w: an SNS subscription confirmation: confirm it by opening its SubscribeURL (%s)", ErrBadEvent, ev.SubscribeURL)
	case ev.Source == "aws.s3" && ev.DetailType != "":
		if ev.DetailType != "Object Created" {
			return nil, nil, nil
		}
		// EventBridge sends the key as it is, not URL-encoded.
		return []Object{{Bucket: ev.Detail.Bucket.Name, Key: ev.Detail.Object.Key, Size: ev.Detail.Object.Size, Event: "ObjectCreated:" + ev.DetailType}}, nil, nil
	}
	if ev.Records == nil && ev.Event == "" {
		return nil, nil, fmt.Errorf("%w: no Records", ErrBadEvent)
	}
	for i, r := range ev.Records {
		if !strings.Contains(r.EventName, "ObjectCreated:") {
			continue
		}
		key, err := url.QueryUnescape(r.S3.Object.Key)
		if err != nil {
			bad = append(bad, fmt.Errorf("%w: record %d: key %q: %v", ErrBadEvent, i, r.S3.Object.Key, err))
			continue
		}
		objs = append(objs, Object{Bucket: r.S3.Bucket.Name, Key: key, Size: r.S3.Object.Size, Event: r.EventName})
	}
	return objs, bad, nil
}

// MinIO is where to subscribe: the S3 endpoint and credentials of a MinIO server.
type MinIO struct {
	Endpoint        string // http://host:port or https://host:port
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// Subscribe attaches the webhook target arn (e.g. arn:minio:sqs::PRIMARY:webhook, which the
// server was started with: MINIO_NOTIFY_WEBHOOK_ENABLE_PRIMARY=on and
// MINIO_NOTIFY_WEBHOOK_ENDPOINT_PRIMARY=http://host:port/path) to the bucket for objects created
// under prefix. It reads the bucket's notification configuration, replaces only our rule (the
// rule of this target for exactly this prefix), keeps every other rule (other teams' targets,
// other prefixes), and writes it back only when it changed. S3 has no conditional write for this
// configuration: a change another client makes between our read and write can be lost, so
// subscribe once at start-up, not in a loop.
func Subscribe(ctx context.Context, m MinIO, bucket, prefix, arn string) error {
	client, err := m.client()
	if err != nil {
		return err
	}
	target, err := notification.NewArnFromString(arn)
	if err != nil {
		return fmt.Errorf("watch: arn %q: %w", arn, err)
	}
	cfg, err := client.GetBucketNotification(ctx, bucket)
	if err != nil {
		return fmt.Errorf("watch: read the notification configuration of bucket %s: %w", bucket, err)
	}
	merged, changed := withRule(cfg, target, prefix)
	if !changed {
		return nil
	}
	if err := client.SetBucketNotification(ctx, bucket, merged); err != nil {
		return fmt.Errorf("watch: subscribe bucket %s to %s (was the server started with that webhook target?): %w", bucket, arn, err)
	}
	return nil
}

// withRule returns cfg with our queue rule (target, every created event, prefix) in place of any
// earlier rule of the same target and prefix, and whether that changed anything.
func withRule(cfg notification.Configuration, target notification.Arn, prefix string) (notification.Configuration, bool) {
	events := []notification.EventType{notification.ObjectCreatedAll}
	ours := notification.NewConfig(target)
	ours.AddEvents(events...)
	if prefix != "" {
		ours.AddFilterPrefix(prefix)
	}
	kept := cfg.QueueConfigs[:0:0]
	present := false
	for _, q := range cfg.QueueConfigs {
		if q.Queue != target.String() || rulePrefix(q.Config) != prefix {
			kept = append(kept, q)
			continue
		}
		if !present && q.Equal(events, prefix, "") {
			present = true
			kept = append(kept, q)
		}
	}
	if present && len(kept) == len(cfg.QueueConfigs) {
		return cfg, false
	}
	if !present {
		kept = append(kept, notification.QueueConfig{Config: ours, Queue: target.String()})
	}
	cfg.QueueConfigs = kept
	return cfg, true
}

// rulePrefix is the prefix filter of a rule, or "".
func rulePrefix(c notification.Config) string {
	if c.Filter == nil {
		return ""
	}
	for _, r := range c.Filter.S3Key.FilterRules {
		if strings.EqualFold(r.Name, "prefix") {
			return r.Value
		}
	}
	return ""
}

// client opens a minio-go client for m.
func (m MinIO) client() (*minio.Client, error) {
	u, err := url.Parse(m.Endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("watch: endpoint %q: want http://host:port", m.Endpoint)
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(m.AccessKeyID, m.SecretAccessKey, m.SessionToken),
		Secure: u.Scheme == "https",
	})
	if err != nil {
		return nil, fmt.Errorf("watch: minio client: %w", err)
	}
	return client, nil
}
