package txlog

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
)

// restoreStep is one commit after version 0 of a restore test's table: an append carrying
// txn(app, version) (app ""), or a commit of another tool's operation with its parameters,
// written as delta-rs and Spark write them (strings).
type restoreStep struct {
	app     string
	op      string
	params  map[string]any
	removes []string // the files the restore removes: f1 when nil
}

func appendBy(app string) restoreStep { return restoreStep{app: app} }

func restoreTo(v int64) restoreStep {
	return restoreStep{op: OperationRestore, params: map[string]any{"version": fmt.Sprint(v)}}
}

func TestRestoredPast(t *testing.T) {
	replace := restoreStep{op: "CREATE OR REPLACE TABLE AS SELECT"}
	cases := []struct {
		name  string
		steps []restoreStep // versions 1, 2, ...
		since int64
		apps  []string
		want  *Restore
	}{
		{"nothing after the recorded version", []restoreStep{appendBy("q"), appendBy("q")}, 2, nil, nil},
		{"appends after it", []restoreStep{appendBy("q"), appendBy("q"), appendBy("x")}, 2, nil, nil},
		{"restored to before it", []restoreStep{appendBy("q"), appendBy("q"), appendBy("q"), restoreTo(1)}, 3, nil,
			&Restore{Version: 4, To: 1, Past: 3}},
		{"restored to it", []restoreStep{appendBy("q"), appendBy("q"), appendBy("q"), restoreTo(3)}, 3, nil, nil},
		{"restored to before it, then appended to", []restoreStep{appendBy("q"), appendBy("q"), restoreTo(1), appendBy("x")}, 2, nil,
			&Restore{Version: 3, To: 1, Past: 2}},
		{"the restore undone", []restoreStep{appendBy("q"), appendBy("q"), restoreTo(1), restoreTo(2)}, 2, nil, nil},
		{"undone to a version that had itself lost it", []restoreStep{appendBy("q"), appendBy("q"), restoreTo(1), appendBy("x"), restoreTo(4)}, 2, nil,
			&Restore{Version: 3, To: 1, Past: 2}},
		{"a restore before the recorded version", []restoreStep{appendBy("q"), restoreTo(0), appendBy("q")}, 3, nil, nil},
		{"rebuilt by a replace after the restore", []restoreStep{appendBy("q"), appendBy("q"), restoreTo(1), replace}, 2, nil, nil},
		{"restored after a replace", []restoreStep{appendBy("q"), replace, restoreTo(1)}, 2, nil, &Restore{Version: 3, To: 1, Past: 2}},
		{"a later writer's commit lost", []restoreStep{appendBy("q"), appendBy("q"), appendBy("m"), restoreTo(2)}, 2, []string{"m"},
			&Restore{Version: 4, To: 2, Past: 3}},
		{"a later writer's commit kept", []restoreStep{appendBy("q"), appendBy("q"), appendBy("m"), restoreTo(3)}, 2, []string{"m"}, nil},
		{"the later writer not asked about", []restoreStep{appendBy("q"), appendBy("q"), appendBy("m"), restoreTo(2)}, 2, nil, nil},
		{"a restore naming no target", []restoreStep{appendBy("q"), appendBy("q"), {op: OperationRestore}}, 2, nil,
			&Restore{Version: 3, To: -1, Past: 2}},
		{"a restore naming a version it does not parse", []restoreStep{appendBy("q"), appendBy("q"), {op: OperationRestore, params: map[string]any{"version": "two"}}}, 2, nil,
			&Restore{Version: 3, To: -1, Past: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			l := fastLog(mem.New(), Options{NoAutoCheckpoint: true})
			createTable(t, l, false, nil)
			for i, s := range c.steps {
				commitStep(t, l, i+1, s)
			}
			got, err := l.RestoredPast(ctx, c.since, c.apps...)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("RestoredPast(%d, %v) = %+v, want %+v", c.since, c.apps, got, c.want)
			}
		})
	}
}

// A restore by time (delta-rs writes "datetime" in ms, Spark "timestamp" as SQL text) is
// resolved as time travel resolves it: the latest version committed at or before it.
func TestRestoredPastByTime(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, params := range []map[string]any{
		{"datetime": fmt.Sprint(start.Add(90 * time.Minute).UnixMilli())},
		{"timestamp": "2026-12-01 11:30:00"},
	} {
		l := hourlyLog(t, start)
		commitStep(t, l, 4, restoreStep{op: OperationRestore, params: params, removes: []string{"f2", "f3"}})
		got, err := l.RestoredPast(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if want := (&Restore{Version: 4, To: 1, Past: 2}); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v: RestoredPast(2) = %+v, want %+v", params, got, want)
		}
	}
}

// A Spark whose JVM runs in another zone than UTC records TO TIMESTAMP AS OF as its own wall
// clock, without the zone: read as UTC, a restore to before the recorded version by a Spark in
// Europe/Berlin (UTC+1) named a version an hour later, after it, and the jobs went on.
func TestRestoredPastByZonelessWallClock(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		wall    string // Europe/Berlin
		removes []string
		want    *Restore
	}{
		{"2026-12-01 12:30:00", []string{"f2", "f3"}, &Restore{Version: 4, To: 1, Past: 2}},
		{"2026-12-01 12:30:00.000", []string{"f2", "f3"}, &Restore{Version: 4, To: 1, Past: 2}},
		{"2026-12-01 13:30:00", []string{"f3"}, nil},
		// Files no candidate held: not a restore this can place, so it counts as one before.
		{"2026-12-01 12:30:00", []string{"f1"}, &Restore{Version: 4, To: -1, Past: 2}},
	} {
		l := hourlyLog(t, start)
		commitStep(t, l, 4, restoreStep{op: OperationRestore, params: map[string]any{"version": nil, "timestamp": c.wall}, removes: c.removes})
		got, err := l.RestoredPast(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s removing %v: RestoredPast(2) = %+v, want %+v", c.wall, c.removes, got, c.want)
		}
	}
}

func commitStep(t *testing.T, l *Log, v int, s restoreStep) {
	t.Helper()
	ctx := context.Background()
	tx := l.Begin(mustSnapshot(t, l))
	op := Operation{Name: "WRITE"}
	if s.op != "" {
		op = Operation{Name: s.op, Parameters: s.params}
		removes := s.removes
		if removes == nil {
			removes = []string{"f1"}
		}
		for _, path := range removes {
			tx.Remove(&Remove{Path: path, DataChange: true})
		}
	} else {
		tx.Add(fileAdd(fmt.Sprintf("f%d", v), ""))
		tx.SetTxn(s.app, int64(v))
	}
	if got, err := tx.Commit(ctx, op); err != nil || got != int64(v) {
		t.Fatalf("commit %d: %d, %v", v, got, err)
	}
}

// hourlyLog is a table of versions 0 to 3 committed an hour apart from start, versions 1 to 3
// each an append carrying txn(q).
func hourlyLog(t *testing.T, start time.Time) *Log {
	t.Helper()
	b := mem.New()
	l := fastLog(b, Options{NoAutoCheckpoint: true})
	createTable(t, l, false, nil)
	for v := 1; v <= 3; v++ {
		commitStep(t, l, v, appendBy("q"))
	}
	for v := int64(0); v <= 3; v++ {
		if err := b.SetModTime(CommitKey(v), start.Add(time.Duration(v)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	return l
}
