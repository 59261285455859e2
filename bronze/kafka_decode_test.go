package bronze

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestKafkaDecodeRecord: each record value becomes one bronze row, with its _kafka_* columns and
// lineage, or one reject naming topic, partition and offset; never both, never neither.
func TestKafkaDecodeRecord(t *testing.T) {
	ts := time.Date(2024, 5, 1, 12, 0, 0, 123000000, time.UTC)
	cases := []struct {
		name, format, value string
		nilValue            bool
		reason              string // "" for a row
		id                  string // the row's event_id
		rescued             string
	}{
		{"json", FormatJSON, `{"event_id":"e1","amount":2.5,"event_time":"2024-05-01T12:00:00Z"}`, false, "", "e1", ""},
		{"json with newline", FormatJSON, "{\"event_id\":\"e2\"}\r\n", false, "", "e2", ""},
		{"json extra field rescued", FormatJSON, `{"event_id":"e3","zzz":1}`, false, "", "e3", `{"zzz":1}`},
		{"invalid json", FormatJSON, `{"event_id":`, false, ReasonInvalidJSON, "", ""},
		{"not an object", FormatJSON, `[1,2]`, false, ReasonNotObject, "", ""},
		{"bad utf8", FormatJSON, "{\"event_id\":\"\xff\"}", false, ReasonInvalidUTF8, "", ""},
		{"tombstone", FormatJSON, "", true, ReasonNotObject, "", ""},
		{"blank", FormatJSON, "  \n", false, ReasonNotObject, "", ""},
		{"too long", FormatJSON, `{"event_id":"` + strings.Repeat("x", 200) + `"}`, false, ReasonTooLong, "", ""},
		{"csv", FormatCSV, "e4,click,1.5,2024-05-01T12:00:00Z", false, "", "e4", ""},
		{"csv extra field and bad number", FormatCSV, "e5,click,lots,2024-05-01T12:00:00Z,more", false, "", "e5", `{"amount":"lots","_c4":"more"}`},
		{"csv quoted comma", FormatCSV, `"e,6",click`, false, "", "e,6", ""},
		{"csv two records", FormatCSV, "e7,a\ne8,b", false, ReasonInvalidCSV, "", ""},
		{"csv bad quote", FormatCSV, `e9,"cl"ick`, false, ReasonInvalidCSV, "", ""},
		{"csv bad utf8", FormatCSV, "e10,\xff", false, ReasonInvalidUTF8, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := newKafkaDecoder(declaredEvents(), Limits{MaxLineBytes: 100})
			if err != nil {
				t.Fatal(err)
			}
			rec := &kgo.Record{Topic: "orders", Partition: 3, Offset: 42, Timestamp: ts, Key: []byte("k\x00")}
			if !tc.nilValue {
				rec.Value = []byte(tc.value)
			}
			var st ObjectStats
			d.record(&st, rec, KafkaSourceName("orders", 3), tc.format, 7)
			if st.Lines != 1 || st.Rows+st.Rejected != 1 || d.Bronze.Len() != int(st.Rows) || d.Rejects.Len() != int(st.Rejected) {
				t.Fatalf("stats %+v, bronze %d, rejects %d: want exactly one row or reject", st, d.Bronze.Len(), d.Rejects.Len())
			}
			if tc.reason != "" {
				c := d.Rejects.Columns
				if st.Rejected != 1 || c[1].StringAt(0) != tc.reason || c[5].StringAt(0) != "kafka://orders/3" || c[6].Int64[0] != 42 ||
					!strings.Contains(c[2].StringAt(0), "topic orders partition 3 offset 42") {
					t.Fatalf("reject: reason %q source %q offset %d error %q; want %s", c[1].StringAt(0), c[5].StringAt(0), c[6].Int64[0], c[2].StringAt(0), tc.reason)
				}
				return
			}
			b := d.Bronze
			col := func(name string) int {
				for i, f := range b.Schema.Fields {
					if f.Name == name {
						return i
					}
				}
				t.Fatalf("no column %s", name)
				return -1
			}
			if got := b.Columns[col("event_id")].StringAt(0); got != tc.id {
				t.Fatalf("event_id %q, want %q", got, tc.id)
			}
			if r := b.Columns[col(ColRescued)]; (tc.rescued == "") != r.IsNull(0) || (tc.rescued != "" && r.StringAt(0) != tc.rescued) {
				t.Fatalf("rescued %q, want %q", r.StringAt(0), tc.rescued)
			}
			if b.Columns[col(ColKafkaTopic)].StringAt(0) != "orders" || b.Columns[col(ColKafkaPartition)].Int32[0] != 3 ||
				b.Columns[col(ColKafkaOffset)].Int64[0] != 42 || b.Columns[col(ColKafkaTimestamp)].Int64[0] != ts.UnixMicro() ||
				string(b.Columns[col(ColKafkaKey)].BytesAt(0)) != "k\x00" || b.Columns[col(ColSourceFile)].StringAt(0) != "kafka://orders/3" ||
				b.Columns[col(ColSourceOffset)].Int64[0] != 42 || b.Columns[col(ColIngestTime)].Int64[0] != 7 {
				t.Fatal("kafka or lineage columns wrong")
			}
		})
	}
}

// FuzzKafkaRecord: any value, in either format, is one row or one reject, and never panics.
func FuzzKafkaRecord(f *testing.F) {
	for _, s := range []string{`{"event_id":"e"}`, "e,a,1,2024-05-01T00:00:00Z", `"x`, "", "\xff", "{\"a\":[[[[\n"} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	d, err := newKafkaDecoder(declaredEvents(), Limits{MaxLineBytes: 256})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value []byte, csv bool) {
		format := FormatJSON
		if csv {
			format = FormatCSV
		}
		d.Bronze.Reset()
		d.Rejects.Reset()
		var st ObjectStats
		d.record(&st, &kgo.Record{Topic: "t", Partition: 0, Offset: 1, Value: value}, "kafka://t/0", format, 0)
		if st.Rows+st.Rejected != 1 || d.Bronze.Len()+d.Rejects.Len() != 1 {
			t.Fatalf("value %q (%s): %d rows, %d rejects", value, format, d.Bronze.Len(), d.Rejects.Len())
		}
	})
}

// TestKafkaUnreachableBrokerFails: with no broker listening, a run fails with ErrKafkaStalled
// after StallTimeout instead of waiting forever (franz-go itself retries without end), and claims
// no batch.
func TestKafkaUnreachableBrokerFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a port that refuses connections
	lake := mem.New()
	opts := kafkaOptions([]string{addr}, "events")
	opts.StallTimeout = 1500 * time.Millisecond
	x, err := NewKafkaIngester(lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = x.Run(ctx)
	if !errors.Is(err, ErrKafkaStalled) || ctx.Err() != nil {
		t.Fatalf("err = %v (ctx %v): want ErrKafkaStalled well before the test's deadline", err, ctx.Err())
	}
	keys, err := objstore.ListAll(ctx, lake, opts.CheckpointPath+"/batches/", objstore.ListOptions{})
	if err != nil || len(keys) != 0 {
		t.Fatalf("batches claimed without a broker: %v %v", keys, err)
	}
}
