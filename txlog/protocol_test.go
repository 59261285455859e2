package txlog

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckRead(t *testing.T) {
	cm := func(mode string) Metadata {
		return Metadata{Configuration: map[string]string{"delta.columnMapping.mode": mode}}
	}
	cases := []struct {
		name string
		p    Protocol
		m    Metadata
		want string // "" = readable; else a substring of the refusal
	}{
		{"plain", Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, Metadata{}, ""},
		{"column mapping name", Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, cm("name"), ""},
		{"column mapping id", Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, cm("id"), ""},
		{"column mapping unknown mode", Protocol{MinReaderVersion: 2, MinWriterVersion: 5}, cm("position"), `columnMapping mode "position"`},
		{"type widening", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"typeWidening"}}, Metadata{}, ""},
		{"type widening preview", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"typeWidening-preview"}}, Metadata{}, ""},
		{"catalog managed", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "catalogManaged"}}, Metadata{}, "reader features catalogManaged"},
		{"catalog owned", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"catalogOwned", "catalogOwned-preview"}}, Metadata{}, "reader features catalogOwned, catalogOwned-preview"},
		{"reader 4", Protocol{MinReaderVersion: 4, MinWriterVersion: 7}, Metadata{}, "reader version 4"},
		{"supported features", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck", "columnMapping"}}, Metadata{}, ""},
		{"unknown features named", Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors", "geospatial", "someFutureFeature"}}, Metadata{}, "reader features geospatial, someFutureFeature"},
		{"reader 99", Protocol{MinReaderVersion: 99, MinWriterVersion: 7}, Metadata{}, "reader version 99"},
		{"reader 0", Protocol{MinReaderVersion: 0}, Metadata{}, "reader version 0"},
	}
	for _, c := range cases {
		err := CheckRead(c.p, c.m)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %q", c.name, err, c.want)
		}
	}
}

func TestCheckWrite(t *testing.T) {
	cases := []struct {
		p    Protocol
		want string
	}{
		{Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, ""},
		{Protocol{MinReaderVersion: 3, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly", "invariants", "deletionVectors", "domainMetadata"}}, ""},
		{Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"identityColumns"}}, "writer features identityColumns"},
		{Protocol{MinReaderVersion: 1, MinWriterVersion: 8}, "writer version 8"},
	}
	for _, c := range cases {
		err := CheckWrite(c.p)
		if (c.want == "") != (err == nil) || (err != nil && (!errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), c.want))) {
			t.Errorf("%+v: err = %v, want %q", c.p, err, c.want)
		}
	}
}

func TestParseLogName(t *testing.T) {
	cases := []struct {
		key     string
		kind    logFileKind
		version int64
	}{
		{"_delta_log/00000000000000000007.json", kindCommit, 7},
		{"_delta_log/00000000000000000010.checkpoint.parquet", kindCheckpointClassic, 10},
		{"_delta_log/00000000000000000001.checkpoint.0000000002.0000000002.parquet", kindCheckpointPart, 1},
		{"_delta_log/00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json", kindCheckpointV2, 2},
		{"_delta_log/00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.parquet", kindCheckpointV2, 2},
		{"_delta_log/00000000000000000003.crc", kindCRC, 3},
		{"_delta_log/00000000000000000004.00000000000000000006.compacted.json", kindCompacted, 4},
		{"_delta_log/.tmp/00000000000000000005.json", kindUnknown, 0},
		{"_delta_log/_staged_commits/00000000000000000005.3f2a.json", kindUnknown, 0},
		{"_delta_log/_sidecars/00000000000000000002.checkpoint.0000000001.0000000002.bd18.parquet", kindUnknown, 0},
		{"_delta_log/_last_checkpoint", kindUnknown, 0},
		{"_delta_log/0000000000000000007.json", kindUnknown, 0},
		{"_delta_log/00000000000000000001.checkpoint.0000000003.0000000002.parquet", kindUnknown, 0},
		{"_delta_log/-0000000000000000001.json", kindUnknown, 0},
		{"part-00000.parquet", kindUnknown, 0},
	}
	for _, c := range cases {
		got := parseLogName(c.key)
		if got.kind != c.kind || (c.kind != kindUnknown && got.version != c.version) {
			t.Errorf("%s: kind %d version %d, want %d %d", c.key, got.kind, got.version, c.kind, c.version)
		}
	}
}

func TestParseActionsErrorsNameTheLine(t *testing.T) {
	cases := []struct {
		in   string
		want string
	}{
		{"{\"commitInfo\":{}}\n{\"add\":{\"path\":\"a\",\"size\":\"big\"}}", "line 2"},
		{"{\"commitInfo\":{}}\n\n{\"add\":{\"path\":\"%zz\"}}", "line 3"},
		{"{\"remove\":{\"path\":\"\"}}", "line 1: remove without a path"},
		{"not json", "line 1"},
	}
	for _, c := range cases {
		_, err := ParseActions([]byte(c.in))
		if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.in, err, c.want)
		}
	}
	actions, err := ParseActions([]byte("{\"futureAction\":{\"x\":1}}\n{\"add\":{\"path\":\"a%20b\",\"partitionValues\":{},\"size\":1,\"newField\":[1]}}\n"))
	if err != nil || len(actions) != 2 || actions[1].Add.Path != "a b" {
		t.Errorf("unknown actions/fields must be ignored: %v %v", actions, err)
	}
}

func TestCorruptCommitNamesFile(t *testing.T) {
	b := memFixture(t, "delta-golden/snapshot-data3")
	if err := b.Put(t.Context(), CommitKey(2), strings.NewReader("{\"add\":"), -1); err != nil {
		t.Fatal(err)
	}
	_, err := New(b).Snapshot(t.Context())
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "00000000000000000002.json: ") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err = %v", err)
	}
}
