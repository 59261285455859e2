package sink

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/table"
)

// TestPublishChildProcess is the publisher that TestPublishExactlyOnceAcrossKills starts and
// SIGKILLs; run on its own (no MEDALLION_SINK_CHILD_LAKE), it does nothing.
func TestPublishChildProcess(t *testing.T) {
	dir := os.Getenv("MEDALLION_SINK_CHILD_LAKE")
	if dir == "" {
		return
	}
	conn := testConn(t)
	b, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec := killSpec(os.Getenv("MEDALLION_SINK_CHILD_NAME"))
	if _, err := Publish(context.Background(), TableFeed(table.Open(b, table.Options{})), conn, spec, Options{MaxRecordsPerTransaction: 4}); err != nil {
		t.Fatal(err)
	}
}

func killSpec(name string) Spec {
	return Spec{Name: name, Table: "gold/events_5m", Topic: name + "-topic", Partitions: 2, Key: goldKey}
}

// TestPublishExactlyOnceAcrossKills: publishers SIGKILLed at random instants (in transactions
// of 4 records, so most kills land inside or between transactions) while the table gains
// versions, then one run to the end: the compacted topic equals the table, and a read_committed
// consumer sees each change exactly once (a record of an aborted transaction would be a second
// copy: the killed run's versions are published again). MEDALLION_LONG=1 kills 40 times.
func TestPublishExactlyOnceAcrossKills(t *testing.T) {
	conn := testConn(t)
	kills := 5
	if os.Getenv("MEDALLION_LONG") == "1" {
		kills = 40
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 32))
	dir := t.TempDir()
	b, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := newCDFGold(t, b)
	g.randomVersions(rng, 30, 12)
	name := uniqueName("kill")
	killed := 0
	for range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPublishChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MEDALLION_SINK_CHILD_LAKE="+dir, "MEDALLION_SINK_CHILD_NAME="+name)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The child's start (exec, broker metadata, producer id) takes tens of milliseconds, a
		// transaction a few: kills land before, inside and between transactions.
		time.Sleep(time.Duration(20+rng.IntN(250)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			killed++
		}
		g.randomVersions(rng, 1+rng.IntN(6), 12)
	}
	if killed == 0 {
		t.Fatal("every child finished before its kill: the test killed nothing")
	}
	t.Logf("%d of %d children killed while running", killed, kills)
	rep, err := Publish(context.Background(), TableFeed(g.tbl), conn, killSpec(name), Options{MaxRecordsPerTransaction: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the last run published versions %d..%d", rep.FromVersion, rep.ToVersion)
	checkTopic(t, conn, killSpec(name).Topic, g, g.version)
}
