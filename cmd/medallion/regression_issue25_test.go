package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestIssue25OwnBronzeReadable is issue 25's reproduction, command for command, with the real
// binary: 1M generated events from 10 devices land in one bronze file of one row group, where
// _rescued_data (a dictionary-encoded optional string column, a few hundred values) has whole
// data pages of nulls during the generator's outages. The flat page reader took such a page's
// empty dictionary-index slice for "no dictionary" and failed on every read, so the stream
// could never run again. Now the scan returns every bronze row and the stream runs.
func TestIssue25OwnBronzeReadable(t *testing.T) {
	if testing.Short() {
		t.Skip("1M events; skipped with -short")
	}
	bin := binary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.yaml")
	yaml := `lake: lake
landing: {path: landing/events/, format: json}
schema:
  - {name: event_id, type: string, required: true}
  - {name: device_id, type: string}
  - {name: amount, type: double}
  - {name: event_time, type: timestamp, required: true}
tables: {bronze: bronze/events, rejects: bronze/rejects, silver: silver/events}
stream: {name: q, event_time: event_time, watermark: 10m}
gold: [{name: g, window: {type: tumbling, size: 5m}, group_by: [device_id], aggregates: [{fn: count, as: n}]}]
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("medallion %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	run("gen", "--config", cfg, "--events", "1000000", "--devices", "10")

	// The oracle is the landing data itself: every line that is valid UTF-8 and parses as a JSON
	// object is a bronze row, counted here without medallion. json.Valid and a leading '{' say
	// the same as decoding each line into a map, without building a million maps under -race.
	objects := 0
	files, err := filepath.Glob(filepath.Join(dir, "lake", "landing", "events", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("landing files: %v %v", files, err)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			line := bytes.TrimLeft(sc.Bytes(), " \t\r\n")
			if utf8.Valid(line) && len(line) > 0 && line[0] == '{' && json.Valid(line) {
				objects++
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}

	run("run", "ingest", "--config", cfg)
	scanned := scanLines(t, bin, dir, "table", "scan", "lake/bronze/events", "--format", "jsonl")
	if scanned != objects {
		t.Fatalf("table scan printed %d bronze rows, the landing files hold %d JSON objects", scanned, objects)
	}

	out := run("run", "stream", "--config", cfg)
	var summary struct {
		OK     bool `json:"ok"`
		Result struct {
			NumInputRows         int `json:"numInputRows"`
			NumSilverRows        int `json:"numSilverRows"`
			NumValidationRejects int `json:"numValidationRejects"`
			NumDuplicatesDropped int `json:"numDuplicatesDropped"`
		} `json:"result"`
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &summary); err != nil || !summary.OK {
		t.Fatalf("stream summary %s: %v", out, err)
	}
	r := summary.Result
	if r.NumInputRows != objects || r.NumSilverRows+r.NumValidationRejects+r.NumDuplicatesDropped != objects {
		t.Fatalf("stream read %d rows (silver %d + rejects %d + duplicates %d), bronze holds %d",
			r.NumInputRows, r.NumSilverRows, r.NumValidationRejects, r.NumDuplicatesDropped, objects)
	}
}

// scanLines runs the binary with its output in a file and counts the file's lines in 1 MiB
// reads. The scan prints a million rows: held in a growing buffer, under -race, its copies and
// the detector's bookkeeping of every byte cost several CPU seconds and gigabytes of memory.
func scanLines(t *testing.T, bin, dir string, args ...string) int {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "scan.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("medallion %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	n, buf := 0, make([]byte, 1<<20)
	for {
		k, err := out.Read(buf)
		n += bytes.Count(buf[:k], []byte("\n"))
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
