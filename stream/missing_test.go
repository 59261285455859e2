package stream

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
)

// TestVacuumedBronzeFilesNamed: a stream lags behind bronze; an optimize compacts the files it
// has not read, and a vacuum (real, with a short retention) deletes them. The stream then
// fails on every run with an error that names the bronze versions and files, says they were
// compacted, and gives the recovery; the store's not-found stays errors.Is-able.
func TestVacuumedBronzeFilesNamed(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	cfg := parseConfig(t, "10m", "", countGold)
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:01")}})
	mustRun(t, lake, cfg, "")
	for _, id := range []string{"b", "c", "d"} {
		appendBronze(t, lake, []ev{{ID: id, T: hm("12:02")}})
	}
	bronzeBucket := objstore.WithPrefix(lake, "bronze/events")
	before, err := table.Open(bronzeBucket, table.Options{}).Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The three files the stream has not read, each with the version that added it.
	unread := map[string]int64{}
	for v := before.Version() - 2; v <= before.Version(); v++ {
		prev, err1 := table.Open(bronzeBucket, table.Options{}).Log().SnapshotAt(ctx, v-1)
		snap, err2 := table.Open(bronzeBucket, table.Options{}).Log().SnapshotAt(ctx, v)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		old := map[string]bool{}
		for _, a := range prev.Files() {
			old[a.Path] = true
		}
		for _, a := range snap.Files() {
			if !old[a.Path] {
				unread[a.Path] = v
			}
		}
	}
	if len(unread) != 3 {
		t.Fatalf("%d unread files, want 3", len(unread))
	}
	if res, err := table.Open(bronzeBucket, table.Options{}).Optimize(ctx, table.OptimizeOptions{}); err != nil || res.FilesRemoved != 4 {
		t.Fatalf("optimize: %+v %v", res, err)
	}
	later := time.Now().Add(time.Hour)
	vac, err := table.Open(bronzeBucket, table.Options{Clock: func() time.Time { return later }}).
		Vacuum(ctx, table.VacuumOptions{Retention: time.Minute, Force: true})
	if err != nil || len(vac.Files) != 4 {
		t.Fatalf("vacuum: %+v %v", vac, err)
	}
	for run := 0; run < 2; run++ {
		_, err = runStream(t, lake, cfg, "")
		if !errors.Is(err, ErrBronzeFilesMissing) || !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("run %d: %v", run, err)
		}
		msg := err.Error()
		if run == 0 {
			t.Log(msg)
		}
		for path, v := range unread {
			if !strings.Contains(msg, path) || !strings.Contains(msg, "version "+strconv.FormatInt(v, 10)+": "+path) {
				t.Errorf("the error does not name %s of version %d: %s", path, v, msg)
			}
		}
		for _, want := range []string{"compacted", "rows are still in bronze", "stream.checkpoint", "new silver", "ingest/", "jobs.vacuum.retain"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the error does not say %q: %s", want, msg)
			}
		}
	}
}
