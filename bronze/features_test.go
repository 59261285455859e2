package bronze

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestIngestHonoursTheBronzeTablesFeatures: a CHECK constraint another engine put on bronze
// holds for the rows ingest writes, and a feature ingest cannot honour (row tracking) refuses
// the batch before any data file is written.
func TestIngestHonoursTheBronzeTablesFeatures(t *testing.T) {
	ctx := context.Background()
	land := func(lake objstore.Bucket, key, amount string) {
		line := `{"event_id":"` + key + `","event_type":"t","amount":` + amount + `,"event_time":"2024-05-01T12:00:00Z"}` + "\n"
		if err := objstore.PutBytes(ctx, lake, "landing/events/"+key+".json", []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(lake objstore.Bucket) error {
		x, err := NewIngester(lake, ingestOptions())
		if err != nil {
			t.Fatal(err)
		}
		_, err = x.Run(ctx)
		return err
	}
	change := func(lake objstore.Bucket, edit func(tx *txlog.Transaction, snap *txlog.Snapshot)) int64 {
		l := table.Open(objstore.WithPrefix(lake, "bronze/events"), table.Options{}).Log()
		snap, err := l.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx := l.Begin(snap)
		edit(tx, snap)
		v, err := tx.Commit(ctx, txlog.Operation{Name: "SET TBLPROPERTIES"})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	dataFiles := func(lake objstore.Bucket) int {
		n := 0
		for info, err := range lake.List(ctx, "bronze/events/", objstore.ListOptions{}) {
			if err == nil && strings.HasSuffix(info.Key, ".parquet") && !strings.Contains(info.Key, "_delta_log") {
				n++
			}
		}
		return n
	}

	lake := mem.New()
	land(lake, "a", "1")
	if err := run(lake); err != nil {
		t.Fatal(err)
	}
	v := change(lake, func(tx *txlog.Transaction, snap *txlog.Snapshot) {
		m := snap.Metadata()
		// As ALTER TABLE ... ADD CONSTRAINT: the other properties stay.
		m.Configuration = maps.Clone(m.Configuration)
		if m.Configuration == nil {
			m.Configuration = map[string]string{}
		}
		m.Configuration["delta.constraints.small"] = "amount < 100"
		tx.SetMetadata(m)
		tx.SetProtocol(txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 3})
	})
	land(lake, "b", "500")
	err := run(lake)
	if !errors.Is(err, table.ErrRowRuleViolated) || !strings.Contains(err.Error(), "CHECK constraint small") {
		t.Fatalf("ingest of a row breaking bronze's CHECK constraint: err = %v", err)
	}
	if got := tableVersion(t, lake); got != v {
		t.Errorf("bronze went from version %d to %d", v, got)
	}

	lake = mem.New()
	land(lake, "a", "1")
	if err := run(lake); err != nil {
		t.Fatal(err)
	}
	v = change(lake, func(tx *txlog.Transaction, _ *txlog.Snapshot) {
		tx.SetProtocol(txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"rowTracking", "domainMetadata"}})
	})
	files := dataFiles(lake)
	land(lake, "b", "2")
	if err := run(lake); !errors.Is(err, txlog.ErrUnsupportedFeature) || !strings.Contains(err.Error(), "rowTracking") || !strings.Contains(err.Error(), "bronze/events") {
		t.Fatalf("ingest into bronze with row tracking: err = %v", err)
	}
	if got := tableVersion(t, lake); got != v {
		t.Errorf("bronze went from version %d to %d", v, got)
	}
	if got := dataFiles(lake); got != files {
		t.Errorf("the refused batch wrote %d data files", got-files)
	}
}

func tableVersion(t *testing.T, lake objstore.Bucket) int64 {
	t.Helper()
	snap, err := table.Open(objstore.WithPrefix(lake, "bronze/events"), table.Options{}).Log().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.Version()
}
