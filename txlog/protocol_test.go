package txlog

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
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

// TestCheckWrite holds each writer feature's obligations, as PROTOCOL.md states them, against
// CheckWrite: which kinds of write a table with that protocol and metadata accepts.
func TestCheckWrite(t *testing.T) {
	w7 := func(features ...string) Protocol {
		return Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: features}
	}
	w := func(v int) Protocol { return Protocol{MinReaderVersion: 1, MinWriterVersion: v} }
	conf := func(kv ...string) Metadata {
		m := Metadata{Configuration: map[string]string{}}
		for i := 0; i < len(kv); i += 2 {
			m.Configuration[kv[i]] = kv[i+1]
		}
		return m
	}
	field := func(meta string) Metadata {
		return Metadata{Configuration: map[string]string{}, SchemaString: `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
			`{"name":"s","type":{"type":"struct","fields":[{"name":"c","type":"long","nullable":true,"metadata":` + meta + `}]},"nullable":true,"metadata":{}}]}`}
	}
	cdf := conf("delta.enableChangeDataFeed", "true")
	appendOnly := conf("delta.appendOnly", "true")
	identity := field(`{"delta.identity.start":1,"delta.identity.step":1,"delta.identity.highWaterMark":4,"delta.identity.allowExplicitInsert":false}`)
	defaults := field(`{"CURRENT_DEFAULT":"42"}`)
	all := []WriteKind{WriteLog, WriteAppend, WriteRearrange, WriteChange}
	cases := []struct {
		name    string
		p       Protocol
		m       Metadata
		refused []WriteKind // the others are accepted
		feature string      // named by the refusal
	}{
		{"plain (1,2)", w(2), Metadata{}, nil, ""},
		{"writer version 1", w(1), Metadata{}, nil, ""},
		{"writer version 0", w(0), Metadata{}, all, "writer version 0"},
		{"writer version 8", w(8), Metadata{}, all, "writer version 8"},
		{"unknown writer features named", w7("appendOnly", "icebergCompatV2", "someFutureFeature"), Metadata{}, all, "icebergCompatV2, someFutureFeature"},
		{"variantType is not written", w7("variantType"), Metadata{}, all, "variantType"},

		// Append-only: no change or removal of data; rearranging is allowed.
		{"appendOnly on, version 2", w(2), appendOnly, []WriteKind{WriteChange}, "appendOnly"},
		{"appendOnly on, feature listed", w7("appendOnly"), appendOnly, []WriteKind{WriteChange}, "appendOnly"},
		{"appendOnly off", w7("appendOnly"), conf("delta.appendOnly", "false"), nil, ""},

		// Change data feed, writer 4 to 6 by the property, 7 by the feature and the property:
		// every kind of write is taken (table.Rewrite writes the change rows of a change; the
		// commit refuses one without them, TestCommitChangeWithoutChangeData).
		{"CDF on, writer 4", w(4), cdf, nil, ""},
		{"CDF on, writer 6", w(6), cdf, nil, ""},
		{"CDF on, writer 7 with the feature", w7("changeDataFeed", "appendOnly", "invariants"), cdf, nil, ""},
		{"CDF supported but off", w7("changeDataFeed"), conf("delta.enableChangeDataFeed", "false"), nil, ""},
		{"CDF feature without the property", w(4), Metadata{}, nil, ""},

		// Identity columns (writer 6, or the feature): new rows need generated values.
		{"identity column, writer 6", w(6), identity, []WriteKind{WriteAppend, WriteChange}, "identityColumns"},
		{"identity column, feature", w7("identityColumns"), identity, []WriteKind{WriteAppend, WriteChange}, "identityColumns"},
		{"identity feature, no identity column", w7("identityColumns"), field(`{}`), nil, ""},

		// Column defaults: rows lacking the column need the default's value.
		{"column default", w7("allowColumnDefaults"), defaults, []WriteKind{WriteAppend, WriteChange}, "allowColumnDefaults"},
		{"column defaults feature, none set", w7("allowColumnDefaults"), field(`{}`), nil, ""},

		// Row tracking: every new file needs row ids.
		{"row tracking supported", w7("rowTracking", "domainMetadata"), Metadata{}, []WriteKind{WriteAppend, WriteRearrange, WriteChange}, "rowTracking"},
		{"row tracking enabled", w7("rowTracking", "domainMetadata"), conf("delta.enableRowTracking", "true"), []WriteKind{WriteAppend, WriteRearrange, WriteChange}, "rowTracking"},

		// Clustering: only a clustering implementation reclusters.
		{"clustered table", w7("clustering", "domainMetadata"), Metadata{}, []WriteKind{WriteRearrange}, "clustering"},

		// Type widening (stable and Delta 3.x's preview name): every write at the current types.
		{"type widening", w7("typeWidening", "appendOnly", "invariants"), conf("delta.enableTypeWidening", "true"), nil, ""},
		{"type widening preview", w7("typeWidening-preview"), conf("delta.enableTypeWidening", "true"), nil, ""},

		// Column mapping: modes this writer knows.
		{"column mapping name, writer 5", w(5), conf("delta.columnMapping.mode", "name"), nil, ""},
		{"column mapping id, feature", w7("columnMapping"), conf("delta.columnMapping.mode", "id"), nil, ""},
		{"column mapping unknown mode", w(5), conf("delta.columnMapping.mode", "position"), all, "columnMapping"},

		// Honoured without a refusal: row rules (by the table layer), DVs, ICT, domains, ...
		{"honoured features", w7("appendOnly", "invariants", "checkConstraints", "generatedColumns", "deletionVectors", "timestampNtz",
			"domainMetadata", "inCommitTimestamp", "v2Checkpoint", "vacuumProtocolCheck", "columnMapping"),
			conf("delta.enableInCommitTimestamps", "true", "delta.constraints.positive", "id > 0", "delta.enableDeletionVectors", "true"), nil, ""},
		{"writer 3 with CHECK constraints", w(3), conf("delta.constraints.positive", "id > 0"), nil, ""},
	}
	for _, c := range cases {
		for _, k := range all {
			err := CheckWrite(c.p, c.m, k)
			if !slices.Contains(c.refused, k) {
				if err != nil {
					t.Errorf("%s, %s: refused: %v", c.name, k, err)
				}
				continue
			}
			var fe *FeatureError
			if !errors.Is(err, ErrUnsupportedFeature) || !errors.As(err, &fe) || !strings.Contains(fe.Feature, c.feature) || !strings.Contains(err.Error(), c.feature) {
				t.Errorf("%s, %s: err = %v, want a refusal naming %q", c.name, k, err, c.feature)
			}
		}
	}
}

func TestEffectiveWriterFeatures(t *testing.T) {
	cases := []struct {
		v    int
		want []string
	}{
		{1, nil},
		{2, []string{"appendOnly", "invariants"}},
		{3, []string{"appendOnly", "invariants", "checkConstraints"}},
		{4, []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}},
		{5, []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"}},
		{6, []string{"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping", "identityColumns"}},
	}
	for _, c := range cases {
		if got := (Protocol{MinReaderVersion: 1, MinWriterVersion: c.v}).EffectiveWriterFeatures(); !slices.Equal(got, c.want) {
			t.Errorf("writer %d: %v, want %v", c.v, got, c.want)
		}
	}
	p := Protocol{MinReaderVersion: 3, MinWriterVersion: 7, WriterFeatures: []string{"deletionVectors"}}
	if got := p.EffectiveWriterFeatures(); !slices.Equal(got, []string{"deletionVectors"}) {
		t.Errorf("writer 7: %v", got)
	}
}

// TestCommitRefusesByFeature: the commit itself runs CheckWrite with what its actions do, the
// last line of defence for any writer that skipped the table layer's check.
func TestCommitRefusesByFeature(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		name string
		prop string
	}{{"change data feed", "delta.enableChangeDataFeed"}, {"append-only", "delta.appendOnly"}} {
		l := New(mem.New(), Options{})
		tx := l.Begin(nil)
		tx.SetProtocol(Protocol{MinReaderVersion: 1, MinWriterVersion: 4})
		tx.SetMetadata(Metadata{SchemaString: `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`,
			Configuration: map[string]string{c.prop: "true"}})
		tx.Add(&Add{Path: "a.parquet", Size: 1, DataChange: true})
		if _, err := tx.Commit(ctx, Operation{Name: "CREATE TABLE"}); err != nil {
			t.Fatal(err)
		}
		snap, err := l.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx = l.Begin(snap) // an append still goes in
		tx.Add(&Add{Path: "b.parquet", Size: 1, DataChange: true})
		if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
			t.Fatalf("%s: append refused: %v", c.name, err)
		}
		if snap, err = l.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		tx = l.Begin(snap) // a compaction too
		tx.Remove(&Remove{Path: "a.parquet", DataChange: false})
		tx.Remove(&Remove{Path: "b.parquet", DataChange: false})
		tx.Add(&Add{Path: "c.parquet", Size: 2, DataChange: false})
		if _, err := tx.Commit(ctx, Operation{Name: "OPTIMIZE"}); err != nil {
			t.Fatalf("%s: compaction refused: %v", c.name, err)
		}
		if snap, err = l.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		tx = l.Begin(snap) // a rewrite of rows is not
		tx.Remove(&Remove{Path: "c.parquet", DataChange: true})
		tx.Add(&Add{Path: "d.parquet", Size: 1, DataChange: true})
		if _, err := tx.Commit(ctx, Operation{Name: "MERGE"}); !errors.Is(err, ErrUnsupportedFeature) && !errors.Is(err, ErrInvalidTransaction) {
			t.Errorf("%s: rewrite: err = %v, want a refusal", c.name, err)
		}
		if after, err := l.Snapshot(ctx); err != nil || after.Version() != snap.Version() {
			t.Errorf("%s: a refused commit landed: %v %v", c.name, after, err)
		}
	}
}

func TestCommitChecksColumnMappingOfNewColumns(t *testing.T) {
	cm := func(fields string, maxID string) Metadata {
		return Metadata{SchemaString: `{"type":"struct","fields":[` + fields + `]}`,
			Configuration: map[string]string{"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": maxID}}
	}
	const a = `{"name":"a","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a"}}`
	cases := []struct {
		name string
		m    Metadata
		want string
	}{
		{"ids and physical names", cm(a+`,{"name":"b","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-b"}}`, "2"), ""},
		{"new column without an id", cm(a+`,{"name":"b","type":"long","nullable":true,"metadata":{}}`, "1"), "column b has no delta.columnMapping.id"},
		{"nested field without a physical name", cm(a+`,{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":3}}]},"nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-s"}}`, "3"), "column s.x has no delta.columnMapping.physicalName"},
		{"id above maxColumnId", cm(a+`,{"name":"b","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":7,"delta.columnMapping.physicalName":"col-b"}}`, "2"), "above delta.columnMapping.maxColumnId"},
		{"duplicate id", cm(a+`,{"name":"b","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-b"}}`, "2"), "share column mapping id 1"},
	}
	for _, c := range cases {
		err := checkColumnMapping(c.m)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
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
	_, err := New(b, Options{}).Snapshot(t.Context())
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "00000000000000000002.json: ") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err = %v", err)
	}
}

// TestCheckpointHonoursStatsProperties: writer version 3 makes delta.checkpoint.writeStatsAsJson
// and writeStatsAsStruct binding; false leaves the JSON stats out, true (stats_parsed, which
// this writer does not write) skips the checkpoint.
func TestCheckpointHonoursStatsProperties(t *testing.T) {
	ctx := t.Context()
	statsIn := func(conf map[string]string) (bool, error) {
		l := fastLog(mem.New(), Options{})
		createTableWith(t, l, false, conf, &Protocol{MinReaderVersion: 1, MinWriterVersion: 3})
		tx := l.Begin(mustSnapshot(t, l))
		a := fileAdd("a", "1")
		a.PartitionValues, a.Stats = nil, `{"numRecords":1}`
		tx.Add(a)
		if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
			t.Fatal(err)
		}
		snap := mustSnapshot(t, l)
		if err := l.Checkpoint(ctx, snap); err != nil {
			return false, err
		}
		back, err := l.Snapshot(ctx)
		if err != nil || back.CheckpointVersion() != snap.Version() {
			t.Fatalf("checkpoint not read back: %v", err)
		}
		return back.Files()[0].Stats != "", nil
	}
	if has, err := statsIn(nil); err != nil || !has {
		t.Errorf("default: stats %v, err %v; want them", has, err)
	}
	if has, err := statsIn(map[string]string{"delta.checkpoint.writeStatsAsJson": "false"}); err != nil || has {
		t.Errorf("writeStatsAsJson=false: stats %v, err %v; want none", has, err)
	}
	if _, err := statsIn(map[string]string{"delta.checkpoint.writeStatsAsStruct": "true"}); !errors.Is(err, ErrUnsupportedFeature) {
		t.Errorf("writeStatsAsStruct=true: err = %v, want ErrUnsupportedFeature", err)
	}
}
