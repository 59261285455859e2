package main

import (
	"strings"
	"testing"
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
}

func TestDetail(t *testing.T) {
	out := []byte(`{"job":"stream","ok":true,"result":{"batches":37,"numSilverRows":1000000,"numDuplicatesDropped":9708,` +
		`"gold":[{"name":"tumbling_5m","numOutputRows":141978,"numLateRowsQuarantined":12000}]}}`)
	want := "batches 37, silver 1000000, duplicates 9708; tumbling_5m: 141978 rows, 12000 late (1.20%)"
	if got := detail("stream", out); got != want {
		t.Errorf("detail = %q, want %q", got, want)
	}
	if got := detail("ingest", []byte(`{"job":"ingest","ok":false,"error":"ingest: boom"}`)); got != "ingest: boom" {
		t.Errorf("detail of a failure = %q", got)
	}
}

func TestOwnFrames(t *testing.T) {
	top := "File: x\nDuration: 35.40s, Total samples = 13.23s (37.37%)\n      flat  flat%   sum%        cum   cum%\n" +
		"     0     0%     0%      8.48s 64.10%  github.com/medallion-lake/medallion/gold/stream.(*Runner).Run\n" +
		"     0.79s  5.97%  5.97%      4.14s 31.29%  runtime.mallocgc\n" +
		"     0     0%     0%      8.19s 61.90%  github.com/medallion-lake/medallion/gold/stream.(*Runner).runBatch\n"
	got := ownFrames(top, 1)
	want := "Duration: 35.40s, Total samples = 13.23s (37.37%)\n      flat  flat%   sum%        cum   cum%\n" +
		"     0     0%     0%      8.48s 64.10%  gold/stream.(*Runner).Run"
	if got != want {
		t.Errorf("ownFrames =\n%s\nwant\n%s", got, want)
	}
}
