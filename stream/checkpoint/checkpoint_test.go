package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/medallion-lake/medallion/table/source"
)

// TestOffsetEntryGolden pins the offsets log format to Spark's shape: v1, the metadata line,
// then the Delta source offset.
func TestOffsetEntryGolden(t *testing.T) {
	e := &Offsets{BatchWatermarkMs: 1714565100000, BatchTimestampMs: 1714566000000,
		Conf: map[string]string{"spark.sql.streaming.multipleWatermarkPolicy": "min"},
		End:  &source.Offset{SourceVersion: 1, ReservoirID: "9d3c", ReservoirVersion: 42, Index: -1}}
	got := e.Marshal()
	want, err := os.ReadFile(filepath.Join("testdata", "offsets.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.TrimRight(want, "\n")) {
		t.Fatalf("offsets/N =\n%s\nwant\n%s", got, want)
	}
	back, err := ParseOffsets("offsets/4", got)
	if err != nil || back.BatchWatermarkMs != e.BatchWatermarkMs || *back.End != *e.End {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestParseCheckpointErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		commit     bool
	}{
		{"empty", "", false},
		{"no version", "{}\n{}\n-", false},
		{"bad json", "v1\n{\n-", false},
		{"bad offset", "v1\n{}\n{", false},
		{"commit v2", "v2\n{}", true},
		{"commit bad json", "v1\n[", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.commit {
				_, err = ParseCommit("commits/3", []byte(tc.data))
			} else {
				_, err = ParseOffsets("offsets/3", []byte(tc.data))
			}
			if !errors.Is(err, ErrBad) {
				t.Fatalf("err = %v, want ErrBad", err)
			}
		})
	}
}

func FuzzParseOffsets(f *testing.F) {
	f.Add([]byte("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n-"))
	f.Add([]byte("v1\n{\"batchWatermarkMs\":5}\n{\"sourceVersion\":1,\"reservoirVersion\":3,\"index\":-1}"))
	f.Add([]byte("v1\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseOffsets("offsets/0", data)
		if err != nil {
			return
		}
		again, err := ParseOffsets("offsets/0", e.Marshal())
		if err != nil || again.BatchWatermarkMs != e.BatchWatermarkMs || (again.End == nil) != (e.End == nil) {
			t.Fatalf("re-parse of %q: %+v, %v", e.Marshal(), again, err)
		}
	})
}

func FuzzDecodeState(f *testing.F) {
	f.Add(encodeState(map[string][]byte{"dedup": []byte("x"), "agg/g": {1, 2, 3}}, []string{"dedup", "agg/g"}))
	f.Add(encodeState(nil, nil))
	f.Add([]byte(stateMagic + "\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeState("state/1", data)
		if err != nil {
			if !errors.Is(err, ErrBad) {
				t.Fatalf("err %v is not ErrBad", err)
			}
			return
		}
		var order []string
		for k := range s {
			order = append(order, k)
		}
		if _, err := decodeState("state/1", encodeState(s, order)); err != nil {
			t.Fatal(err)
		}
	})
}

// TestJoinOffsetsGolden pins a join's offsets/N: Spark's shape with one offset line per
// source (left, then right; "-" for a source with no offset yet), and medallion's per-source
// and output watermarks in the metadata line, which late/ and report/ read.
func TestJoinOffsetsGolden(t *testing.T) {
	out := int64(1714565089999)
	e := &Offsets{BatchWatermarkMs: 1714565100000, BatchTimestampMs: 1714566000000,
		Conf:               map[string]string{"spark.sql.streaming.multipleWatermarkPolicy": "min"},
		Sources:            []*source.Offset{{SourceVersion: 1, ReservoirID: "a1", ReservoirVersion: 7, Index: 0}, nil},
		SourceWatermarksMs: map[string]int64{"impressions": 1714565400000, "clicks": 1714565100000},
		OutputWatermarkMs:  &out}
	got := e.Marshal()
	want, err := os.ReadFile(filepath.Join("testdata", "offsets_join.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.TrimRight(want, "\n")) {
		t.Fatalf("offsets/N =\n%s\nwant\n%s", got, want)
	}
	back, err := ParseOffsets("offsets/4", got)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Sources) != 2 || back.Sources[1] != nil || *back.Sources[0] != *e.Sources[0] || back.End != back.Sources[0] ||
		back.SourceWatermarksMs["clicks"] != 1714565100000 || back.SourceWatermarksMs["impressions"] != 1714565400000 ||
		back.OutputWatermarkMs == nil || *back.OutputWatermarkMs != out {
		t.Fatalf("round trip: %+v", back)
	}
	single, err := ParseOffsets("offsets/4", (&Offsets{End: e.Sources[0]}).Marshal())
	if err != nil || single.Sources != nil || single.OutputWatermarkMs != nil || single.SourceWatermarksMs != nil {
		t.Fatalf("a single-source entry parses as %+v, %v", single, err)
	}
}
