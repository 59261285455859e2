package txlog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
)

func TestTimeTravelByTimestamp(t *testing.T) {
	ctx := context.Background()
	// EXPECTED.md: the generator set commit mtimes to start, +20 min, +40 min; git lost them.
	start := time.UnixMilli(1540415658000).UTC()
	b := memFixture(t, "delta-golden/time-travel-start-start20-start40")
	for v, off := range []time.Duration{0, 20 * time.Minute, 40 * time.Minute} {
		if err := b.SetModTime(CommitKey(int64(v)), start.Add(off)); err != nil {
			t.Fatal(err)
		}
	}
	l := New(b, Options{})
	cases := []struct {
		at      time.Duration
		version int64
		err     bool
	}{
		{0, 0, false},
		{10 * time.Minute, 0, false},
		{20 * time.Minute, 1, false},
		{40 * time.Minute, 2, false},
		{50 * time.Minute, 0, true},
		{-time.Millisecond, 0, true},
	}
	for _, c := range cases {
		snap, err := l.SnapshotAsOf(ctx, start.Add(c.at))
		if c.err {
			if !errors.Is(err, ErrVersionNotFound) {
				t.Errorf("start%+v: err = %v, want ErrVersionNotFound", c.at, err)
			}
			continue
		}
		if err != nil || snap.Version() != c.version {
			t.Errorf("start%+v: %v, %v; want version %d", c.at, snap, err, c.version)
			continue
		}
		if !snap.Timestamp().Equal(start.Add([]time.Duration{0, 20 * time.Minute, 40 * time.Minute}[c.version])) {
			t.Errorf("version %d timestamp = %v", c.version, snap.Timestamp())
		}
	}
	hist, err := l.History(ctx, 2)
	if err != nil || len(hist) != 2 || hist[0].Version != 2 || hist[1].Version != 1 || !hist[0].Timestamp.Equal(start.Add(40*time.Minute)) {
		t.Errorf("history = %+v, %v", hist, err)
	}
}

func TestTimeTravelMonotonizesFileTimes(t *testing.T) {
	ctx := context.Background()
	b := memFixture(t, "delta-golden/snapshot-data3")
	base := time.UnixMilli(1_700_000_000_000).UTC()
	// Versions 1 and 2 carry a time not after version 0: Spark reads them as +1 ms, +2 ms.
	for v, ts := range []time.Time{base, base.Add(-time.Hour), base, base.Add(time.Minute)} {
		if err := b.SetModTime(CommitKey(int64(v)), ts); err != nil {
			t.Fatal(err)
		}
	}
	l := New(b, Options{})
	for _, c := range []struct {
		at      time.Time
		version int64
	}{{base, 0}, {base.Add(time.Millisecond), 1}, {base.Add(2 * time.Millisecond), 2}, {base.Add(30 * time.Second), 2}, {base.Add(time.Minute), 3}} {
		snap, err := l.SnapshotAsOf(ctx, c.at)
		if err != nil || snap.Version() != c.version {
			t.Errorf("as of %v: %v %v, want %d", c.at, snap, err, c.version)
		}
	}
}

func TestTimeTravelInCommitTimestamps(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	clock := time.UnixMilli(1_800_000_000_000).UTC()
	l := fastLog(b, Options{Clock: func() time.Time { return clock }})
	createTable(t, l, false, map[string]string{"delta.enableInCommitTimestamps": "true", "delta.inCommitTimestampEnablementVersion": "0"})
	for i := 0; i < 3; i++ {
		clock = clock.Add(time.Hour)
		tx := l.Begin(mustSnapshot(t, l))
		tx.Add(fileAdd(fmt.Sprintf("f%d", i), "x"))
		if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
			t.Fatal(err)
		}
	}
	// File times say nothing useful: all commits get the same mtime.
	for v := int64(0); v <= 3; v++ {
		if err := b.SetModTime(CommitKey(v), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	base := time.UnixMilli(1_800_000_000_000).UTC()
	snap, err := l.SnapshotAsOf(ctx, base.Add(2*time.Hour+time.Minute))
	if err != nil || snap.Version() != 2 {
		t.Fatalf("as of +2h1m: %v %v, want version 2", snap, err)
	}
	if !snap.Timestamp().Equal(base.Add(2 * time.Hour)) {
		t.Errorf("timestamp = %v, want in-commit timestamp %v", snap.Timestamp(), base.Add(2*time.Hour))
	}
}
