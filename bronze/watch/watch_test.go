package watch

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want []Object
		err  bool
	}{
		{"minio put, encoded key", `{"EventName":"s3:ObjectCreated:Put","Key":"lake/landing/a b.json","Records":[{"eventVersion":"2.0","eventSource":"minio:s3","eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"landing%2Fa+b.json","size":2}}}]}`,
			[]Object{{Bucket: "lake", Key: "landing/a b.json", Size: 2, Event: "s3:ObjectCreated:Put"}}, false},
		{"aws, several records, a delete skipped", `{"Records":[{"eventName":"ObjectCreated:CompleteMultipartUpload","s3":{"bucket":{"name":"b"},"object":{"key":"x/%C3%A9t%C3%A9.json.gz","size":9}}},{"eventName":"ObjectRemoved:Delete","s3":{"bucket":{"name":"b"},"object":{"key":"x/gone"}}}]}`,
			[]Object{{Bucket: "b", Key: "x/été.json.gz", Size: 9, Event: "ObjectCreated:CompleteMultipartUpload"}}, false},
		{"aws test event", `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2024-05-01T00:00:00Z","Bucket":"b"}`, nil, false},
		{"not json", `hello`, nil, true},
		{"json without records", `{"a":1}`, nil, true},
		{"sns delivery", `{"Type":"Notification","MessageId":"m","TopicArn":"arn:aws:sns:us-east-1:1:t","Message":"{\"Records\":[{\"eventName\":\"ObjectCreated:Put\",\"s3\":{\"bucket\":{\"name\":\"b\"},\"object\":{\"key\":\"in/a+b.json\",\"size\":3}}}]}"}`,
			[]Object{{Bucket: "b", Key: "in/a b.json", Size: 3, Event: "ObjectCreated:Put"}}, false},
		{"sns subscription confirmation", `{"Type":"SubscriptionConfirmation","SubscribeURL":"https://sns.example/confirm"}`, nil, true},
		{"eventbridge object created", `{"version":"0","detail-type":"Object Created","source":"aws.s3","detail":{"bucket":{"name":"b"},"object":{"key":"in/2023-08-08T14:03:40.json","size":5}}}`,
			[]Object{{Bucket: "b", Key: "in/2023-08-08T14:03:40.json", Size: 5, Event: "ObjectCreated:Object Created"}}, false},
		{"eventbridge object deleted", `{"version":"0","detail-type":"Object Deleted","source":"aws.s3","detail":{"bucket":{"name":"b"},"object":{"key":"in/x"}}}`, nil, false},
		{"bad escape", `{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"%zz"}}}]}`, nil, true},
	} {
		got, err := ParseEvent([]byte(tc.body))
		if tc.err {
			if !errors.Is(err, ErrBadEvent) {
				t.Errorf("%s: got %v, want ErrBadEvent", tc.name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"a+b","size":1}}}]}`))
	f.Add([]byte(`{"Event":"s3:TestEvent"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		objs, err := ParseEvent(body)
		if err != nil && !errors.Is(err, ErrBadEvent) {
			t.Fatalf("error %v does not wrap ErrBadEvent", err)
		}
		for _, o := range objs {
			if o.Event == "" {
				t.Fatal("an object without its event name")
			}
		}
	})
}

// TestParseEventRecordsSkipsBadRecord: one record whose key does not decode is reported on its
// own; the good records of the same notification are still returned.
func TestParseEventRecordsSkipsBadRecord(t *testing.T) {
	body := `{"Records":[` +
		`{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"in/one.json","size":1}}},` +
		`{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"in/%zz.json","size":1}}},` +
		`{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"in/two.json","size":1}}}]}`
	objs, bad, err := ParseEventRecords([]byte(body))
	if err != nil || len(bad) != 1 || !errors.Is(bad[0], ErrBadEvent) {
		t.Fatalf("bad %v, err %v: want one ErrBadEvent for record 1", bad, err)
	}
	if len(objs) != 2 || objs[0].Key != "in/one.json" || objs[1].Key != "in/two.json" {
		t.Fatalf("objects %+v, want one.json and two.json", objs)
	}
}
