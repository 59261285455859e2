package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/kafka"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// testConn is the test broker of scripts/kafka.sh. Without one the test is skipped, unless
// MEDALLION_REQUIRE_KAFKA=1 or CI=true (make test sets it), where a missing broker fails.
func testConn(t *testing.T) kafka.Conn {
	t.Helper()
	b := os.Getenv("MEDALLION_TEST_KAFKA_BROKERS")
	if b == "" {
		if os.Getenv("MEDALLION_REQUIRE_KAFKA") == "1" || os.Getenv("CI") == "true" {
			t.Fatal("MEDALLION_TEST_KAFKA_BROKERS is not set: run under scripts/kafka.sh run -- (make test does)")
		}
		t.Skip("no Kafka broker: run under scripts/kafka.sh run -- to test against a real broker")
	}
	return kafka.Conn{Brokers: strings.Split(b, ",")}
}

func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

// record is a published record as a read_committed consumer sees it.
type record struct {
	key     map[string]any
	value   map[string]any // nil: a tombstone
	version int64
	typ     string
	table   string
}

// readTopic is every committed record of the topic, decoded.
func readTopic(t *testing.T, conn kafka.Conn, topic string) []record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := kafka.WaitStable(ctx, conn, topic, time.Minute); err != nil {
		t.Fatal(err)
	}
	var out []record
	err := kafka.ReadCommitted(ctx, conn, topic, time.Minute, func(r *kgo.Record) error {
		var rec record
		if err := json.Unmarshal(r.Key, &rec.key); err != nil {
			return fmt.Errorf("key %q: %w", r.Key, err)
		}
		if r.Value != nil {
			if err := json.Unmarshal(r.Value, &rec.value); err != nil {
				return fmt.Errorf("value %q: %w", r.Value, err)
			}
		}
		for _, h := range r.Headers {
			switch h.Key {
			case HeaderTable:
				rec.table = string(h.Value)
			case HeaderChangeType:
				rec.typ = string(h.Value)
			case HeaderCommitVersion:
				v, err := strconv.ParseInt(string(h.Value), 10, 64)
				if err != nil {
					return fmt.Errorf("header %s=%q: %w", h.Key, h.Value, err)
				}
				rec.version = v
			}
		}
		out = append(out, rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compacted applies compaction's rule to the records in offset order: per key the last record
// wins, a tombstone removes the key. It checks each record's key against its row (a key is the
// row's window and group) and its value against its headers.
func compacted(t *testing.T, recs []record, tableName string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range recs {
		if r.table != tableName {
			t.Fatalf("record of version %d says table %q, want %q", r.version, r.table, tableName)
		}
		k := rowKey(r.key)
		if len(r.key) != 2 {
			t.Fatalf("key %v: want the window and event_type only", r.key)
		}
		if r.value == nil {
			if r.typ != string(table.ChangeDelete) {
				t.Fatalf("tombstone of %s at version %d says change type %q", k, r.version, r.typ)
			}
			delete(out, k)
			continue
		}
		row, _ := r.value["row"].(map[string]any)
		if rowKey(row) != k || !reflect.DeepEqual(row["window"], r.key["window"]) {
			t.Fatalf("record key %v does not match its row %v", r.key, row)
		}
		if r.value["change_type"] != r.typ || r.value["commit_version"] != float64(r.version) {
			t.Fatalf("value %v disagrees with its headers (%s, %d)", r.value, r.typ, r.version)
		}
		if r.typ != string(table.ChangeInsert) && r.typ != string(table.ChangePostimage) {
			t.Fatalf("a row published with change type %q", r.typ)
		}
		out[k] = row
	}
	return out
}

// checkTopic checks the topic against the table: its compacted view equals the table scanned
// (and the test's model), and it holds exactly one record per key each version changed, for
// the versions up to through.
func checkTopic(t *testing.T, conn kafka.Conn, topic string, g *cdfGold, through int64) {
	t.Helper()
	recs := readTopic(t, conn, topic)
	view := compacted(t, recs, "gold/events_5m")
	scan := scanned(t, g.tbl)
	if !reflect.DeepEqual(view, scan) {
		t.Errorf("compacted topic (%d keys) differs from the table scanned (%d rows):\n topic %v\n table %v", len(view), len(scan), view, scan)
	}
	if model := g.modelRows(); !reflect.DeepEqual(scan, model) {
		t.Fatalf("the table scanned differs from the test's model (the helper is broken):\n scan  %v\n model %v", scan, model)
	}
	seen := map[string]int{}
	for _, r := range recs {
		seen[fmt.Sprintf("%d %s", r.version, rowKey(r.key))]++
	}
	want := map[string]int{}
	for v, keys := range g.changed {
		if v > through {
			continue
		}
		for k := range keys {
			var typ any
			if k.typ != "" {
				typ = k.typ
			}
			want[fmt.Sprintf("%d %s", v, rowKey(map[string]any{"window": map[string]any{"start": k.start().Format(time.RFC3339)}, "event_type": typ}))] = 1
		}
	}
	if !reflect.DeepEqual(seen, want) {
		var extra, missing []string
		for k, n := range seen {
			if want[k] != n {
				extra = append(extra, fmt.Sprintf("%s ×%d", k, n))
			}
		}
		for k := range want {
			if seen[k] == 0 {
				missing = append(missing, k)
			}
		}
		t.Errorf("records per (version, key) are not exactly the changes: unexpected or repeated %v; missing %v", extra, missing)
	}
}

// TestPublishCompactedTopicEqualsTable publishes a gold table's change feed in several
// transactions, then more versions incrementally: the compacted topic equals the table scanned
// after each run, each change is published once, a run with nothing new publishes nothing, and
// the metric counts the records.
func TestPublishCompactedTopicEqualsTable(t *testing.T) {
	conn := testConn(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 32))
	g := newCDFGold(t, mem.New())
	g.randomVersions(rng, 12, 10)
	spec := Spec{Name: uniqueName("pub"), Table: "gold/events_5m", Topic: uniqueName("events_5m_changes"), Partitions: 3, Key: goldKey}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{MaxRecordsPerTransaction: 7, Metrics: m}
	rep, err := Publish(ctx, TableFeed(g.tbl), conn, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.TopicCreated || rep.FromVersion != 0 || rep.ToVersion != g.version || rep.Transactions < 2 || rep.Records != rep.Upserts+rep.Tombstones {
		t.Errorf("first run: %+v", rep)
	}
	checkTopic(t, conn, spec.Topic, g, g.version)
	first := rep.Records

	// randomVersions commits up to 5 versions: one whose deletes all miss commits nothing.
	published := g.version
	g.randomVersions(rng, 5, 14)
	rep, err = Publish(ctx, TableFeed(g.tbl), conn, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.TopicCreated || rep.FromVersion != published+1 || rep.ToVersion != g.version {
		t.Errorf("incremental run: %+v (table at version %d)", rep, g.version)
	}
	checkTopic(t, conn, spec.Topic, g, g.version)

	again, err := Publish(ctx, TableFeed(g.tbl), conn, spec, opts)
	if err != nil || !again.UpToDate || again.Records != 0 || again.FromVersion != g.version+1 {
		t.Errorf("run with nothing new: %+v, %v", again, err)
	}
	total := 0.0
	for _, typ := range []string{"insert", "update_postimage", "delete"} {
		total += testutil.ToFloat64(m.rows.WithLabelValues(spec.Name, spec.Table, typ))
	}
	if total != float64(first+rep.Records) {
		t.Errorf("medallion_change_rows_published_total = %v, want %d", total, first+rep.Records)
	}
	if n := len(readTopic(t, conn, spec.Topic)); int64(n) != first+rep.Records {
		t.Errorf("the topic holds %d records, the runs published %d", n, first+rep.Records)
	}
}

// failingFeed is a table's feed that fails when it reaches version failAt: a read error in the
// middle of a run (a vacuumed change file, a store outage).
type failingFeed struct {
	Feed
	failAt int64
}

var errInjected = errors.New("injected read failure")

func (f failingFeed) Changes(ctx context.Context, from, to int64) iter.Seq2[table.ChangeSet, error] {
	return func(yield func(table.ChangeSet, error) bool) {
		for cs, err := range f.Feed.Changes(ctx, from, to) {
			if err == nil && cs.Version >= f.failAt {
				yield(table.ChangeSet{}, fmt.Errorf("version %d: %w", cs.Version, errInjected))
				return
			}
			if !yield(cs, err) || err != nil {
				return
			}
		}
	}
}

// TestPublishFailureAbortsTransaction: a read failure in the middle of a run aborts the open
// transaction (a read_committed reader never sees its records) and keeps the position of the
// last committed one, so the next run publishes the rest exactly once.
func TestPublishFailureAbortsTransaction(t *testing.T) {
	conn := testConn(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 32))
	g := newCDFGold(t, mem.New())
	g.randomVersions(rng, 10, 6)
	spec := Spec{Name: uniqueName("fail"), Table: "gold/events_5m", Topic: uniqueName("fail_changes"), Partitions: 1, Key: goldKey}
	opts := Options{MaxRecordsPerTransaction: 10}
	rep, err := Publish(ctx, failingFeed{TableFeed(g.tbl), 7}, conn, spec, opts)
	if !errors.Is(err, errInjected) {
		t.Fatalf("publish over a failing feed: %v, want the injected failure", err)
	}
	if rep.Transactions == 0 {
		t.Fatalf("no transaction committed before version 7: %+v (the test needs a smaller MaxRecordsPerTransaction)", rep)
	}
	for _, r := range readTopic(t, conn, spec.Topic) {
		if r.version >= 7 {
			t.Fatalf("a record of version %d is visible after the run failed at version 7", r.version)
		}
	}
	if _, err := Publish(ctx, TableFeed(g.tbl), conn, spec, opts); err != nil {
		t.Fatal(err)
	}
	checkTopic(t, conn, spec.Topic, g, g.version)
}

// TestPublishRefusesReplacedTable: a sink whose position names another Delta table (the table
// was created again at the same path) stops with ErrTableReplaced instead of publishing the new
// table's versions after the old ones.
func TestPublishRefusesReplacedTable(t *testing.T) {
	conn := testConn(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(8, 32))
	g := newCDFGold(t, mem.New())
	g.randomVersions(rng, 2, 4)
	spec := Spec{Name: uniqueName("replaced"), Table: "gold/events_5m", Topic: uniqueName("replaced_changes"), Partitions: 1, Key: goldKey}
	if _, err := Publish(ctx, TableFeed(g.tbl), conn, spec, Options{}); err != nil {
		t.Fatal(err)
	}
	again := newCDFGold(t, mem.New())
	again.randomVersions(rng, 3, 4)
	if _, err := Publish(ctx, TableFeed(again.tbl), conn, spec, Options{}); !errors.Is(err, ErrTableReplaced) || !strings.Contains(err.Error(), "delete topic "+spec.Topic) {
		t.Fatalf("publish of a replaced table: %v, want ErrTableReplaced naming the way out", err)
	}
}

// TestPublishSnapshotWhenFeedUnreadable: a first run whose change feed cannot be read from
// version 0 (here version 1's change data file was vacuumed) publishes the table's rows at its
// latest version, as inserts of that version, in one transaction; the next run goes on with the
// feed from the version after it. The compacted topic equals the table after each run.
func TestPublishSnapshotWhenFeedUnreadable(t *testing.T) {
	conn := testConn(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 32))
	b := mem.New()
	g := newCDFGold(t, b)
	g.randomVersions(rng, 6, 8)
	if err := b.Delete(ctx, g.cdcPaths[1]); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: uniqueName("snap"), Table: "gold/events_5m", Topic: uniqueName("snap_changes"), Partitions: 2, Key: goldKey}
	rep, err := Publish(ctx, TableFeed(g.tbl), conn, spec, Options{MaxRecordsPerTransaction: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Snapshot || rep.Transactions != 1 || rep.Records != int64(len(g.state)) || rep.FromVersion != g.version || rep.ToVersion != g.version {
		t.Errorf("snapshot run: %+v, want one transaction of the table's %d rows at version %d", rep, len(g.state), g.version)
	}
	recs := readTopic(t, conn, spec.Topic)
	if !reflect.DeepEqual(compacted(t, recs, spec.Table), scanned(t, g.tbl)) || len(recs) != len(g.state) {
		t.Fatalf("after the snapshot, the topic (%d records) differs from the table (%d rows)", len(recs), len(g.state))
	}
	for _, r := range recs {
		if r.version != g.version || r.typ != string(table.ChangeInsert) {
			t.Fatalf("a snapshot record says version %d, %s; want %d, insert", r.version, r.typ, g.version)
		}
	}
	snapAt := g.version
	g.randomVersions(rng, 4, 8)
	rep, err = Publish(ctx, TableFeed(g.tbl), conn, spec, Options{})
	if err != nil || rep.Snapshot || rep.FromVersion != snapAt+1 {
		t.Fatalf("run after the snapshot: %+v, %v", rep, err)
	}
	if !reflect.DeepEqual(compacted(t, readTopic(t, conn, spec.Topic), spec.Table), scanned(t, g.tbl)) {
		t.Error("after the feed went on from the snapshot, the compacted topic differs from the table")
	}
}

// TestPublishRefusesTableWithoutFeed: a table whose change data feed is off is refused with
// ErrChangeFeedOff naming the property, not published as a snapshot nobody keeps up to date.
func TestPublishRefusesTableWithoutFeed(t *testing.T) {
	conn := testConn(t)
	ctx := context.Background()
	schema, err := txlog.ParseSchema(goldSchema)
	if err != nil {
		t.Fatal(err)
	}
	tbl := table.Open(mem.New(), table.Options{})
	if _, err := tbl.Create(ctx, schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: uniqueName("off"), Table: "gold/events_5m", Topic: uniqueName("off_changes"), Partitions: 1, Key: goldKey}
	if _, err := Publish(ctx, TableFeed(tbl), conn, spec, Options{}); !errors.Is(err, table.ErrChangeFeedOff) || !strings.Contains(err.Error(), table.ChangeFeedProperty+"=true") {
		t.Fatalf("publish of a table without a feed: %v, want ErrChangeFeedOff", err)
	}
}

// TestPublishAfterTopicDeleted: a topic deleted and created again takes the sink's position
// with it (Kafka drops a deleted topic's committed offsets), so the next run publishes the table
// from the start and the new topic holds it.
func TestPublishAfterTopicDeleted(t *testing.T) {
	conn := testConn(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(10, 32))
	g := newCDFGold(t, mem.New())
	g.randomVersions(rng, 5, 6)
	spec := Spec{Name: uniqueName("deleted"), Table: "gold/events_5m", Topic: uniqueName("deleted_changes"), Partitions: 1, Key: goldKey}
	if _, err := Publish(ctx, TableFeed(g.tbl), conn, spec, Options{}); err != nil {
		t.Fatal(err)
	}
	cl, err := conn.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).DeleteTopics(ctx, spec.Topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	// The deletion completes in the background: wait until the brokers no longer know the topic.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		td, err := kadm.NewClient(cl).ListTopics(ctx, spec.Topic)
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := td[spec.Topic]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s still listed a minute after its deletion", spec.Topic)
		}
	}
	g.randomVersions(rng, 2, 6)
	rep, err := Publish(ctx, TableFeed(g.tbl), conn, spec, Options{})
	if err != nil || !rep.TopicCreated || rep.FromVersion != 0 {
		t.Fatalf("publish into the recreated topic: %+v, %v; want it created and published from version 0", rep, err)
	}
	checkTopic(t, conn, spec.Topic, g, g.version)
}
