package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// TestRegressionGrowingLandingObject: a writer keeps appending to a landing object (in place on a
// file lake; by uploading it again, longer, on MinIO) while ingest runs again and again, then a
// last ingest runs after the writer stopped. Every line of the final object must be in bronze or
// rejects exactly once (a line the writer had half written when ingest listed the object is two
// pieces, each a reject: accounted for, not lost). Before, an object was read past its listed
// size and never again: 18,699 of 20,000 lines were lost with exit 0.
func TestRegressionGrowingLandingObject(t *testing.T) {
	lines := 2000
	if os.Getenv("MEDALLION_LONG") == "1" {
		lines = 20000 // and half the runs during the growth are killed at a random instant
	}
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		lake := filepath.Join(dir, "lake")
		path := filepath.Join(lake, "landing/events/growing.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		appendTo := func(data []byte) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = f.Write(data)
			f.Close()
		}
		open := func(table string) objstore.Bucket {
			b, err := file.New(filepath.Join(lake, table))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		growWhileIngesting(t, lakecheck.WriteConfig(t, dir, lake, ""), lines, appendTo, open, "landing/events/growing.json")
	})
	t.Run("s3", func(t *testing.T) {
		bucket, cfg, open := lakecheck.TestBucket(t)
		landing := open("lake", "landing/events")
		var content []byte
		appendTo := func(data []byte) {
			content = append(content, data...)
			if err := objstore.PutBytes(context.Background(), landing, "growing.json", content); err != nil {
				t.Error(err)
			}
		}
		dir := t.TempDir()
		c := lakecheck.WriteConfig(t, dir, "s3://"+bucket+"/lake", "s3: {endpoint: \""+cfg.Endpoint+"\", region: us-east-1, path_style: true}\n")
		growWhileIngesting(t, c, lines, appendTo, func(table string) objstore.Bucket { return open("lake", table) }, "landing/events/growing.json")
	})
}

func growWhileIngesting(t *testing.T, cfg string, lines int, appendTo func([]byte), open func(table string) objstore.Bucket, key string) {
	bin := lakecheck.Binary(t)
	killing := os.Getenv("MEDALLION_LONG") == "1" // and kill half the runs while the object grows
	// The writer: chunks of 1 to 37 lines, and now and then a chunk that ends inside a line.
	var final bytes.Buffer
	var starts []int64 // the test's own record of where each line starts
	for i := 0; i < lines; i++ {
		starts = append(starts, int64(final.Len()))
		fmt.Fprintf(&final, `{"event_id":"g%05d","event_type":"t%d","amount":1.5,"event_time":"2026-01-10T12:%02d:00Z"}`+"\n", i, i%3, i%60)
	}
	all := final.Bytes()
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for at, n := 0, 0; at < len(all); n++ {
			end := min(len(all), at+(n%37+1)*90)
			if n%5 != 4 { // most chunks end at a line end
				if i := bytes.IndexByte(all[end-1:], '\n'); i >= 0 {
					end += i
				}
			}
			appendTo(all[at:end])
			at = end
			time.Sleep(10 * time.Millisecond) // a producer's pace: ingest runs see the object grow
		}
	}()
	runs, kills := 0, 0
	rng := rand.New(rand.NewPCG(23, uint64(lines)))
	ingest := func() {
		if killing && rng.IntN(2) == 0 {
			// SIGKILL at a random instant of the run: the next runs must converge.
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(400))*time.Millisecond)
			r, err := lakecheck.Run(ctx, bin, nil, "run", "ingest", "--config", cfg)
			cancel()
			if err != nil || r.Code != 0 {
				kills++
			}
			return
		}
		r := lakecheck.MustRun(t, bin, nil, "run", "ingest", "--config", cfg)
		runs++
		var sum struct {
			Result struct{ Lines, Rows, Rejected int64 }
		}
		if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || sum.Result.Lines != sum.Result.Rows+sum.Result.Rejected {
			t.Fatalf("summary %q (%v): lines must equal rows + rejects", r.Stdout, err)
		}
	}
	for writing := true; writing; {
		select {
		case <-done:
			writing = false
		default:
		}
		ingest()
	}
	wg.Wait()
	killing = false
	ingest() // what the last runs did not see yet

	// Every (offset) of bronze and rejects once; every line start of the object among them; every
	// bronze row the line the test wrote at its offset.
	seen := map[int64]string{}
	for _, tc := range []struct{ table, fileCol, offCol string }{
		{"bronze/events", "_source_file", "_source_offset"},
		{"bronze/rejects", "source_file", "source_offset"},
	} {
		rows, err := lakecheck.Rows(context.Background(), open(tc.table))
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			var m map[string]any
			if err := json.Unmarshal([]byte(row), &m); err != nil {
				t.Fatal(err)
			}
			if m[tc.fileCol] != key {
				continue
			}
			// Rows prints numbers rounded to 12 digits, in exponent form past a million.
			f, err := strconv.ParseFloat(fmt.Sprint(m[tc.offCol]), 64)
			if err != nil {
				t.Fatal(err)
			}
			off := int64(f)
			if prev, dup := seen[off]; dup {
				t.Fatalf("offset %d ingested twice (%s and %s)", off, prev, tc.table)
			}
			seen[off] = tc.table
			if tc.table == "bronze/events" {
				i := bytes.Count(all[:off], []byte("\n"))
				if i >= len(starts) || starts[i] != off || m["event_id"] != fmt.Sprintf("g%05d", i) {
					t.Fatalf("bronze row at offset %d (%v) is not line %d as written", off, m["event_id"], i)
				}
			}
		}
	}
	lost := 0
	for _, s := range starts {
		if seen[s] == "" {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d lines lost (in neither bronze nor rejects) after %d ingest runs", lost, lines, runs)
	}
	t.Logf("SUMMARY %d lines, %d ingest runs while the object grew, %d killed, %d pieces of lines cut by a listing (rejects)", lines, runs, kills, len(seen)-lines)
}
