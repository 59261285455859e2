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
func ParseEvent(body []byte) ([]Object, error) {
	var ev struct {
		Records []struct {
			EventName string `json:"eventName"`
			S3        struct {
				Bucket struct {
					Name string `json:"name"`
				} `json:"bucket"`
				Object struct {
					Key  string `json:"key"`
					Size int64  `json:"size"`
				} `json:"object"`
			} `json:"s3"`
		} `json:"Records"`
		Event string `json:"Event"` // "s3:TestEvent"
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	if ev.Records == nil && ev.Event == "" {
		return nil, fmt.Errorf("%w: no Records", ErrBadEvent)
	}
	var out []Object
	for i, r := range ev.Records {
		if !strings.Contains(r.EventName, "ObjectCreated:") {
			continue
		}
		key, err := url.QueryUnescape(r.S3.Object.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: key %q: %v", ErrBadEvent, i, r.S3.Object.Key, err)
		}
		out = append(out, Object{Bucket: r.S3.Bucket.Name, Key: key, Size: r.S3.Object.Size, Event: r.EventName})
	}
	return out, nil
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
// under prefix. It replaces the bucket's notification configuration.
func Subscribe(ctx context.Context, m MinIO, bucket, prefix, arn string) error {
	u, err := url.Parse(m.Endpoint)
	if err != nil || u.Host == "" {
		return fmt.Errorf("watch: endpoint %q: want http://host:port", m.Endpoint)
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:  credentials.NewStaticV4(m.AccessKeyID, m.SecretAccessKey, m.SessionToken),
		Secure: u.Scheme == "https",
	})
	if err != nil {
		return fmt.Errorf("watch: minio client: %w", err)
	}
	target, err := notification.NewArnFromString(arn)
	if err != nil {
		return fmt.Errorf("watch: arn %q: %w", arn, err)
	}
	q := notification.NewConfig(target)
	q.AddEvents(notification.ObjectCreatedAll)
	if prefix != "" {
		q.AddFilterPrefix(prefix)
	}
	var cfg notification.Configuration
	cfg.AddQueue(q)
	if err := client.SetBucketNotification(ctx, bucket, cfg); err != nil {
		return fmt.Errorf("watch: subscribe bucket %s to %s (was the server started with that webhook target?): %w", bucket, arn, err)
	}
	return nil
}
