//go:build unix

package late

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
)

// deriveHelper is the killed process's job: merge-late, then every derived level.
func deriveHelper(t *testing.T, lake objstore.Bucket) {
	cfg := testConfig(t, derivedYAML)
	o := opts(lake, cfg)
	if _, err := MergeLate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := DeriveAll(context.Background(), o, specs.Derived(cfg)); err != nil {
		t.Fatal(err)
	}
}

// TestSIGKILLDuringDerive kills merge-late + derive processes with SIGKILL at random instants
// on a file lake (a run that finishes has its derived tables dropped, so that each run writes
// them whole and is killed doing so), then runs them cleanly: every level equals the batch aggregation and each
// derived table's change feed of the landed commits replays to it (invariant C).
func TestSIGKILLDuringDerive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	lake, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, derivedYAML)
	land(t, lake, 52, 3000, 6)
	ingest(t, lake, cfg)
	srep := runStream(t, lake, cfg)
	helper := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLateHelperProcess$")
		cmd.Env = append(os.Environ(), helperJob+"=derive", helperLake+"="+dir)
		return cmd
	}
	// How long a run takes when it has all the work to do: timed on a copy of the lake.
	copyDir := t.TempDir()
	if err := exec.Command("cp", "-a", dir+"/.", copyDir).Run(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	probe := exec.Command(os.Args[0], "-test.run=^TestLateHelperProcess$")
	probe.Env = append(os.Environ(), helperJob+"=derive", helperLake+"="+copyDir)
	if out, err := probe.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	full := time.Since(began)
	rng := rand.New(rand.NewPCG(9, 9))
	killed := 0
	for range 8 {
		cmd := helper()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(full))))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
		} else {
			// It finished: drop the derived tables so that the next run has their whole
			// work to do again, and is killed doing it.
			for _, g := range []string{"gold/d30", "gold/d2m"} {
				if err := os.RemoveAll(dir + "/" + g); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Logf("%d of 8 runs killed (an uninterrupted run takes %v)", killed, full)
	if killed == 0 {
		t.Fatal("no run was killed mid-way: the test no longer exercises crashes")
	}
	deriveHelper(t, lake)
	if n := derivedDiffs(t, lake, srep.WatermarkMs, t.Errorf); n > 0 {
		t.Fatalf("invariant E after kills: %d differences", n)
	}
	for _, g := range []string{"gold/d30", "gold/d2m"} {
		checkFeed(t, lake, g)
	}
}
