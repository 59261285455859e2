package checkpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

// TestWriteSectionsStreams: a state file written section by section, one section produced by
// its Write while the file is stored (in many small writes), holds the bytes of the format as
// spelled out here (magic, count, each name and section with their lengths, CRC-32), on the
// memory, file and S3 backends; ReadState reads it back. A Write that fails, or writes other
// than its announced size, fails the write and leaves no state file.
func TestWriteSectionsStreams(t *testing.T) {
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), 40_000) // 640 KB, past any copy buffer
	streamed := func(w io.Writer) error {
		for p := big; len(p) > 0; p = p[min(len(p), 1000):] {
			if _, err := w.Write(p[:min(len(p), 1000)]); err != nil {
				return err
			}
		}
		return nil
	}
	secs := []Section{{Name: "idle", Data: []byte{1, 2}}, {Name: "agg-delta/g", Size: int64(len(big)), Write: streamed}, {Name: "empty"}}
	var want []byte
	want = append(want, "MDLSTRM1"...)
	want = append(want, 3)
	want = append(want, 4)
	want = append(want, "idle"...)
	want = append(want, 2, 1, 2)
	want = append(want, 11)
	want = append(want, "agg-delta/g"...)
	want = binary.AppendUvarint(want, uint64(len(big)))
	want = append(want, big...)
	want = append(want, 5)
	want = append(want, "empty"...)
	want = append(want, 0)
	want = binary.BigEndian.AppendUint32(want, crc32.ChecksumIEEE(want))
	for name, open := range map[string]func(t *testing.T) objstore.Bucket{
		"mem": func(*testing.T) objstore.Bucket { return mem.New() },
		"file": func(t *testing.T) objstore.Bucket {
			b, err := file.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		"s3": func(t *testing.T) objstore.Bucket { return s3test.NewTestBucket(t) },
	} {
		t.Run(name, func(t *testing.T) {
			b := open(t)
			d := Open(b)
			if err := d.WriteSections(ctx, 1, secs); err != nil {
				t.Fatal(err)
			}
			got, err := objstore.ReadAll(ctx, b, StateKey(1))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("state file of %d bytes differs from the format's %d", len(got), len(want))
			}
			if !bytes.Equal(encodeState(map[string][]byte{"idle": {1, 2}, "agg-delta/g": big, "empty": nil}, []string{"idle", "agg-delta/g", "empty"}), want) {
				t.Fatal("encodeState differs from the streamed file")
			}
			s, err := d.ReadState(ctx, 1)
			if err != nil || !bytes.Equal(s["agg-delta/g"], big) || !bytes.Equal(s["idle"], []byte{1, 2}) {
				t.Fatalf("ReadState: %d sections, %v", len(s), err)
			}
			boom := errors.New("boom")
			for what, bad := range map[string]Section{
				"failing":   {Name: "x", Size: 3000, Write: func(w io.Writer) error { _, _ = w.Write(big[:1000]); return boom }},
				"too short": {Name: "x", Size: 3000, Write: func(w io.Writer) error { _, err := w.Write(big[:1000]); return err }},
				"too long":  {Name: "x", Size: 10, Write: func(w io.Writer) error { _, err := w.Write(big[:1000]); return err }},
			} {
				err := d.WriteSections(ctx, 2, []Section{secs[0], bad})
				if err == nil || what == "failing" && !errors.Is(err, boom) {
					t.Fatalf("%s section: %v", what, err)
				}
				if _, err := b.Stat(ctx, StateKey(2)); !errors.Is(err, objstore.ErrNotFound) {
					t.Fatalf("%s section left a state file: %v", what, err)
				}
			}
		})
	}
}
