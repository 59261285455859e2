package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bench"
	"github.com/medallion-lake/medallion/config"
)

func TestCrossCheck(t *testing.T) {
	ours := []byte(`{"job":"replay","ok":true,"result":{"gold":[` +
		`{"name":"tumbling_5m","inputRows":972917,"commit":{"windowsInserted":142021}},` +
		`{"name":"sliding_10m_5m","inputRows":972917,"commit":{"windowsInserted":142194}}]}}`)
	for _, tc := range []struct {
		polars, want string
	}{
		{`{"gold":{"tumbling_5m":{"rows":142021,"events":972917},"sliding_10m_5m":{"rows":142194,"events":1939287}}}`, "agree"},
		{`{"gold":{"tumbling_5m":{"rows":142021,"events":972916},"sliding_10m_5m":{"rows":142194,"events":1939287}}}`, "DISAGREE"},
		{`{"gold":{"tumbling_5m":{"rows":142021,"events":972917}}}`, "DISAGREE"},
		{`not json`, "no summary from the polars replay"},
	} {
		if got := crossCheck(ours, []byte("log line\n"+tc.polars)); !strings.Contains(got, tc.want) {
			t.Errorf("crossCheck with %s = %q, want it to say %q", tc.polars, got, tc.want)
		}
	}
	// An unchanged replay reports no windows: its events still have to agree.
	unchanged := []byte(`{"job":"replay","ok":true,"result":{"gold":[` +
		`{"name":"tumbling_5m","inputRows":972917,"unchanged":true},` +
		`{"name":"sliding_10m_5m","inputRows":972917,"unchanged":true}]}}`)
	for _, tc := range []struct {
		polars, want string
	}{
		{`{"gold":{"tumbling_5m":{"rows":142021,"events":972917},"sliding_10m_5m":{"rows":142194,"events":1939287}}}`, "agree"},
		{`{"gold":{"tumbling_5m":{"rows":142021,"events":972916},"sliding_10m_5m":{"rows":142194,"events":1939287}}}`, "DISAGREE"},
	} {
		if got := crossCheck(unchanged, []byte(tc.polars)); !strings.Contains(got, tc.want) || !strings.Contains(got, "unchanged") {
			t.Errorf("crossCheck of an unchanged replay with %s = %q, want it to say %q and unchanged", tc.polars, got, tc.want)
		}
	}
}

func TestDetail(t *testing.T) {
	out := []byte(`{"job":"stream","ok":true,"result":{"batches":37,"numSilverRows":1000000,"numDuplicatesDropped":9708,` +
		`"gold":[{"name":"tumbling_5m","numOutputRows":141978,"numLateRowsQuarantined":12000}]}}`)
	want := "batches 37, silver 1000000, duplicates 9708; tumbling_5m: 141978 rows, 12000 late (1.20%)"
	for _, stage := range []string{"stream", "stream-backlog"} {
		if got := detail(stage, out); got != want {
			t.Errorf("detail(%s) = %q, want %q", stage, got, want)
		}
	}
	ingest := []byte(`{"job":"ingest","ok":true,"result":{"rows":1000000,"rejected":0,"batches":4}}`)
	for _, stage := range []string{"ingest", "ingest-backlog"} {
		if got, want := detail(stage, ingest), "rows 1000000, rejected 0, batches 4"; got != want {
			t.Errorf("detail(%s) = %q, want %q", stage, got, want)
		}
	}
	if got := detail("ingest", []byte(`{"job":"ingest","ok":false,"error":"ingest: boom"}`)); got != "ingest: boom" {
		t.Errorf("detail of a failure = %q", got)
	}
}

func TestOwnFrames(t *testing.T) {
	top := "File: x\nDuration: 35.40s, Total samples = 13.23s (37.37%)\n      flat  flat%   sum%        cum   cum%\n" +
		"     0     0%     0%      8.48s 64.10%  github.com/medallion-lake/medallion/stream.(*Runner).Run\n" +
		"     0.79s  5.97%  5.97%      4.14s 31.29%  runtime.mallocgc\n" +
		"     0     0%     0%      8.19s 61.90%  github.com/medallion-lake/medallion/stream.(*Runner).runBatch\n"
	got := ownFrames(top, 1)
	want := "Duration: 35.40s, Total samples = 13.23s (37.37%)\n      flat  flat%   sum%        cum   cum%\n" +
		"     0     0%     0%      8.48s 64.10%  stream.(*Runner).Run"
	if got != want {
		t.Errorf("ownFrames =\n%s\nwant\n%s", got, want)
	}
}

// The landing files per backlog ingest commit, worked out by hand: 72 files over 12h, so 1M
// events put 13889 events in a file and 250000 of them take 18 files.
func TestBacklogTriggers(t *testing.T) {
	o := options{backlogEvents: 250_000, backlogStreamFiles: 1000, backlogStreamBytes: "16MB"}
	for _, tc := range []struct {
		events int64
		files  int
		want   int
	}{
		{1_000_000, 72, 18},
		{10_000_000, 72, 2},  // 138889 per file: 1.8 files
		{50_000_000, 72, 1},  // more than 250000 per file: still one
		{1_000_000, 100, 25}, // exactly 10000 per file
		{1_000_001, 100, 25}, // a hair more per file: 24.99... files
		{999_999, 100, 26},   // a hair less: 25.0000025 files
		{1000, 1, 250},
	} {
		got := backlogTriggers(o, tc.events, tc.files)
		if got.landingFiles != tc.want || got.streamFiles != 1000 || got.streamBytes != "16MB" {
			t.Errorf("backlogTriggers(%d events, %d files) = %+v, want %d landing files, 1000 stream files, 16MB", tc.events, tc.files, got, tc.want)
		}
	}
}

// Both configs load, and carry the triggers the report says they do.
func TestPipelineYAML(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name            string
		t               triggers
		landing, stream int
		streamBytes     int64
	}{
		{"micro", microTriggers(), 1, 2, 0},
		{"backlog", triggers{landingFiles: 18, streamFiles: 1000, streamBytes: "16MB"}, 18, 1000, 16_000_000},
	} {
		p := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(p, []byte(pipelineYAML(filepath.Join(dir, "lake"), "", tc.t)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if cfg.Landing.MaxFilesPerTrigger != tc.landing || cfg.Stream.MaxFilesPerTrigger != tc.stream ||
			cfg.Stream.MaxBytesPerTrigger.Bytes != tc.streamBytes {
			t.Errorf("%s: landing %d, stream %d files and %d bytes; want %d, %d, %d", tc.name, cfg.Landing.MaxFilesPerTrigger,
				cfg.Stream.MaxFilesPerTrigger, cfg.Stream.MaxBytesPerTrigger.Bytes, tc.landing, tc.stream, tc.streamBytes)
		}
	}
}

func TestCheckBacklogFlags(t *testing.T) {
	good := options{backlogEvents: 1, backlogStreamFiles: 1, backlogStreamBytes: "16MB"}
	if err := checkBacklogFlags(good); err != nil {
		t.Errorf("good flags: %v", err)
	}
	for _, bad := range []options{
		{backlogEvents: 0, backlogStreamFiles: 1, backlogStreamBytes: "16MB"},
		{backlogEvents: 1, backlogStreamFiles: 0, backlogStreamBytes: "16MB"},
		{backlogEvents: 1, backlogStreamFiles: 1, backlogStreamBytes: "16 pages"},
	} {
		if err := checkBacklogFlags(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// The Kafka lake's config loads through the real loader as a Kafka landing of the given
// brokers and topic, read from the earliest offset.
func TestPipelineYAMLKafka(t *testing.T) {
	dir := t.TempDir()
	tr := microTriggers()
	tr.landing = kafkaLanding("127.0.0.1:9092, 127.0.0.1:9093", "bench-1M-1k-file-7")
	p := filepath.Join(dir, "kafka.yaml")
	if err := os.WriteFile(p, []byte(pipelineYAML(filepath.Join(dir, "lake"), "", tr)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Landing.Kafka
	if cfg.Landing.Kind != config.LandingKafka || k == nil {
		t.Fatalf("landing kind %q, kafka %+v; want a kafka landing", cfg.Landing.Kind, k)
	}
	if strings.Join(k.Brokers, ",") != "127.0.0.1:9092,127.0.0.1:9093" || strings.Join(k.TopicList(), ",") != "bench-1M-1k-file-7" ||
		k.StartingOffsets != "earliest" {
		t.Errorf("kafka landing %+v: want brokers 127.0.0.1:9092 and :9093, topic bench-1M-1k-file-7, earliest", k)
	}
}

// A rerun of a killed harness must not produce into the topic of the run before: the topic
// differs with the time, and names the case.
func TestKafkaTopic(t *testing.T) {
	c := bench.Case{Events: 1_000_000, Keys: 1000, Backend: "file"}
	now := time.Unix(1_700_000_000, 0)
	a, b := kafkaTopic(c, now), kafkaTopic(c, now.Add(time.Nanosecond))
	if a == b || !strings.HasPrefix(a, "bench-1M-1k-file-") {
		t.Errorf("topics %q and %q: want distinct names starting bench-1M-1k-file-", a, b)
	}
}

func TestStages(t *testing.T) {
	for _, tc := range []struct {
		flag      string
		want, run []string // selected; run (selected or needed by a selected one)
		skip      []string // must not run
	}{
		{"", stageOrder, stageOrder, nil},
		{"ingest", []string{bench.StageIngest}, []string{bench.StageIngest},
			[]string{bench.StageStream, bench.StageMergeLate, bench.StageReplay, bench.StageEndToEnd, bench.StageIngestBacklog, bench.StageStreamBacklog}},
		{"replay", []string{bench.StageReplay}, []string{bench.StageIngest, bench.StageStream, bench.StageMergeLate, bench.StageReplay},
			[]string{bench.StageEndToEnd, bench.StageIngestBacklog}},
		{"e2e", []string{bench.StageEndToEnd}, []string{bench.StageIngest, bench.StageStream, bench.StageMergeLate},
			[]string{bench.StageReplay, bench.StageIngestBacklog}},
		{"stream-backlog", []string{bench.StageStreamBacklog}, []string{bench.StageIngestBacklog, bench.StageStreamBacklog},
			[]string{bench.StageIngest, bench.StageStream}},
		{"join", []string{bench.StageJoin}, []string{bench.StageJoin},
			[]string{bench.StageIngest, bench.StageIngestBacklog, bench.StageKafkaIngest}},
		{" merge-late , kafka", []string{bench.StageMergeLate, bench.StageKafkaIngest},
			[]string{bench.StageIngest, bench.StageStream, bench.StageMergeLate}, []string{bench.StageReplay}},
	} {
		s, err := parseStages(tc.flag)
		if err != nil {
			t.Fatalf("parseStages(%q): %v", tc.flag, err)
		}
		for _, st := range tc.want {
			if !s.want(st) {
				t.Errorf("--stages %q: %s not selected", tc.flag, st)
			}
		}
		for _, st := range tc.run {
			if !s.runs(st) {
				t.Errorf("--stages %q: %s does not run", tc.flag, st)
			}
		}
		for _, st := range tc.skip {
			if s.runs(st) || s.want(st) {
				t.Errorf("--stages %q: %s runs", tc.flag, st)
			}
		}
	}
	if s, _ := parseStages("replay,ingest"); s.String() != "ingest,replay-24h" {
		t.Errorf("String() = %q", s.String())
	}
	if _, err := parseStages("ingest,bogus"); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("parseStages(bogus) = %v, want an error naming the stage", err)
	}
}
