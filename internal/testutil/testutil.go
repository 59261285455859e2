// Package testutil holds the helpers the packages' tests share: the test pipeline's events
// schema, parsing a pipeline config, and reading a table's version. Tests only: nothing here
// writes to a lake or keeps state, so there is nothing a crash could leave behind.
package testutil

import (
	"context"
	"errors"
	"testing"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// EventsSchema is the schema block of the test events in pipeline YAML: an id, a type, an
// amount and an event time.
const EventsSchema = `schema:
  - {name: event_id,   type: string, required: true}
  - {name: event_type, type: string}
  - {name: amount,     type: double}
  - {name: event_time, type: timestamp, required: true}
`

// Pipeline parses a pipeline config, failing t when it is not valid.
func Pipeline(t testing.TB, yaml string) *config.Pipeline {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TableVersion is the latest version of the table at path in lake, -1 when there is no table
// yet.
func TableVersion(t testing.TB, lake objstore.Bucket, path string) int64 {
	t.Helper()
	snap, err := table.Open(objstore.WithPrefix(lake, path), table.Options{}).Log().Snapshot(context.Background())
	if errors.Is(err, txlog.ErrTableNotFound) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return snap.Version()
}
