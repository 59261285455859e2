package crash

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// DESIGN §5 promises that a run produces the same table contents (modulo file names and
// timestamps) as any other run of the same input. Two uninterrupted runs of ingest + stream on
// the same landing objects used to differ: ingest spread a batch's objects over its per-core
// files as workers finished, and a fresh stream ordered the starting snapshot by modification
// time and random file name; the stream's max_files_per_trigger counts files, so micro-batches,
// the late/on-time split and which resend of a duplicate won all varied.
func TestRegressionTwoCleanRunsGiveTheSameTables(t *testing.T) {
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	var lakes []string
	for _, name := range []string{"a", "b"} {
		lake := filepath.Join(dir, name)
		cfg := lakecheck.WriteConfig(t, mkdir(t, dir, "cfg-"+name), lake, "")
		genWorkload(t, bin, cfg, 12000, 16)
		lakecheck.MustRun(t, bin, nil, "run", "ingest", "--config", cfg)
		lakecheck.MustRun(t, bin, nil, "run", "stream", "--config", cfg)
		lakes = append(lakes, lake)
	}
	for _, c := range []struct {
		table string
		drop  []string
	}{
		{"silver/events", []string{"_ingest_time"}},
		{"silver/late_g5", []string{"_ingest_time", "query_id"}},
		{"gold/g5", nil},
	} {
		var rows [2][]string
		for i, lake := range lakes {
			var err error
			rows[i], err = lakecheck.Rows(context.Background(), openTable(t, lake, c.table), c.drop...)
			if err != nil {
				t.Fatal(err)
			}
		}
		if d := lakecheck.Diff(rows[0], rows[1]); d != "" {
			t.Errorf("%s differs between two uninterrupted runs of the same input: %.600s", c.table, d)
		}
	}
}

func openTable(t *testing.T, lake, table string) objstore.Bucket { return open(t, lake, table) }
