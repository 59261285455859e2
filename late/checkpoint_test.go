package late

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream/checkpoint"
)

func TestReadStreamState(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    streamState
		wantErr error
		bad     bool
	}{
		{name: "no stream", wantErr: errNoStream},
		{name: "no batch", files: map[string]string{"metadata": `{"id":"q"}`}, want: streamState{queryID: "q", batch: -1}},
		{name: "committed", files: map[string]string{"metadata": `{"id":"q"}`,
			"offsets/0": "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1}\n-", "commits/0": "v1\n{\"nextBatchWatermarkMs\":5}",
			"offsets/1": "v1\n{\"batchWatermarkMs\":5000,\"batchTimestampMs\":2}\n{\"reservoirVersion\":3,\"index\":-1}", "commits/1": "v1\n{}",
			"offsets/2": "v1\n{\"batchWatermarkMs\":9000,\"batchTimestampMs\":3}\n-", "commits/2.crc": "x"},
			want: streamState{queryID: "q", batch: 1, evictMs: 5000}},
		{name: "committed with tables", files: map[string]string{"metadata": `{"id":"q"}`,
			"offsets/0": "v1\n{\"batchWatermarkMs\":7,\"batchTimestampMs\":1}\n-",
			"commits/0": "v1\n{\"nextBatchWatermarkMs\":5,\"tables\":{\"gold/g\":{\"batch\":0,\"version\":3}}}"},
			want: streamState{queryID: "q", batch: 0, evictMs: 7, tables: map[string]checkpoint.TableMark{"gold/g": {Batch: 0, Version: 3}}}},
		{name: "lost id", files: map[string]string{"commits/0": "v1\n{}", "offsets/0": "v1\n{\"batchWatermarkMs\":0}\n-"}, wantErr: checkpoint.ErrQueryIDLost},
		{name: "metadata without id", files: map[string]string{"metadata": `{}`}, bad: true},
		{name: "offsets missing", files: map[string]string{"metadata": `{"id":"q"}`, "commits/4": "v1\n{}"}, bad: true},
		{name: "offsets torn", files: map[string]string{"metadata": `{"id":"q"}`, "commits/0": "v1\n{}", "offsets/0": "v1\n{\"batchWat"}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mem.New()
			for k, v := range tc.files {
				if err := objstore.PutBytes(ctx, b, k, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			got, _, err := readStreamState(ctx, checkpoint.Open(b))
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			case tc.bad:
				if err == nil {
					t.Fatalf("no error, state %+v", got)
				}
			case err != nil:
				t.Fatal(err)
			case !reflect.DeepEqual(got, tc.want):
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzCheckpointFiles feeds arbitrary offsets and metadata files to the checkpoint readers:
// an error or a state, never a panic.
func FuzzCheckpointFiles(f *testing.F) {
	f.Add([]byte(`{"id":"q"}`), []byte("v1\n{\"batchWatermarkMs\":5000,\"batchTimestampMs\":2}\n{\"reservoirVersion\":3,\"index\":-1}"))
	f.Add([]byte(`{"id":""}`), []byte("v1\n{}\n-"))
	f.Add([]byte(`null`), []byte("v2\n\n\n"))
	f.Add([]byte(`{"id":"q"}`), []byte("v1\n{\"batchWatermarkMs\":null}\n{\"reservoirVersion\":\"x\"}"))
	f.Fuzz(func(t *testing.T, meta, offsets []byte) {
		ctx := context.Background()
		b := mem.New()
		_ = objstore.PutBytes(ctx, b, "metadata", meta)
		_ = objstore.PutBytes(ctx, b, "offsets/0", offsets)
		_ = objstore.PutBytes(ctx, b, "commits/0", []byte("v1\n{}"))
		if st, _, err := readStreamState(ctx, checkpoint.Open(b)); err == nil && (st.queryID == "" || st.batch != 0) {
			t.Fatalf("state %+v without an error", st)
		}
		_, _ = checkpoint.Open(b).ReadOffsets(ctx, 0)
	})
}
