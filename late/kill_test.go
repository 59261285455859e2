//go:build unix

package late

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
)

// Environment of the helper process that TestSIGKILLDuringMergeLateAndReplay kills.
const (
	helperJob  = "MEDALLION_LATE_HELPER_JOB"
	helperLake = "MEDALLION_LATE_HELPER_LAKE"
	helperFrom = "MEDALLION_LATE_HELPER_FROM"
	helperTo   = "MEDALLION_LATE_HELPER_TO"
)

// TestLateHelperProcess is not a test: it is the process the SIGKILL test starts and kills.
func TestLateHelperProcess(t *testing.T) {
	job := os.Getenv(helperJob)
	if job == "" {
		return
	}
	lake, err := file.New(os.Getenv(helperLake))
	if err != nil {
		t.Fatal(err)
	}
	if job == "derive" {
		deriveHelper(t, lake)
		return
	}
	o := opts(lake, testConfig(t, ""))
	if job == "merge" {
		_, err = MergeLate(context.Background(), o)
	} else {
		from, _ := strconv.ParseInt(os.Getenv(helperFrom), 10, 64)
		to, _ := strconv.ParseInt(os.Getenv(helperTo), 10, 64)
		_, err = Replay(context.Background(), o, Range{From: time.UnixMicro(from), To: time.UnixMicro(to)})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestSIGKILLDuringMergeLateAndReplay kills merge-late and replay processes with SIGKILL at
// random instants on a file lake, then reruns both cleanly: gold ends equal to the batch
// aggregation, each late row counted once.
func TestSIGKILLDuringMergeLateAndReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	lake, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "")
	land(t, lake, 51, 3000, 6)
	ingest(t, lake, cfg)
	srep := runStream(t, lake, cfg)
	r := replayRange(silverTimes(t, lake), 0.2, 0.8)
	helper := func(job string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLateHelperProcess$")
		cmd.Env = append(os.Environ(), helperJob+"="+job, helperLake+"="+dir,
			helperFrom+"="+strconv.FormatInt(r.From.UnixMicro(), 10), helperTo+"="+strconv.FormatInt(r.To.UnixMicro(), 10))
		return cmd
	}
	// Uninterrupted replays tell how long a run takes (the second one, warm); kills land
	// anywhere within that.
	var full time.Duration
	for range 2 {
		began := time.Now()
		if out, err := helper("replay").CombinedOutput(); err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		full = time.Since(began)
	}
	damage(t, lake, "gold/t5", r.From.UnixMicro(), r.To.UnixMicro())
	rng := rand.New(rand.NewPCG(7, 7))
	killed, finished := 0, 0
	for i := range 16 {
		job := "merge"
		if i%2 == 1 {
			job = "replay"
		}
		cmd := helper(job)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(full))))
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
		} else if cmd.ProcessState.Success() {
			finished++
		}
	}
	t.Logf("%d runs killed, %d finished before the signal (an uninterrupted run takes %v)", killed, finished, full)
	if killed < 2 {
		t.Fatalf("only %d runs were killed mid-way: the test no longer exercises crashes", killed)
	}
	if _, err := MergeLate(context.Background(), opts(lake, cfg)); err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(context.Background(), opts(lake, cfg), r); err != nil {
		t.Fatal(err)
	}
	checkInvariantE(t, lake, srep.WatermarkMs)
	// The change feed: the killed runs wrote change files no version names (a reader of the
	// feed reads only those its commits name), and the feed of the landed commits, applied
	// from version 0, is gold at every version.
	for _, g := range []string{"gold/t5", "gold/s10"} {
		named := map[string]bool{}
		for _, v := range checkFeed(t, lake, g) {
			for _, p := range v.ChangeFiles {
				named[g+"/"+p] = true
			}
		}
		orphans := 0
		for info, err := range lake.List(context.Background(), g+"/_change_data/", objstore.ListOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if !named[info.Key] {
				orphans++
			}
		}
		t.Logf("%s: %d change files named by commits, %d left by killed runs", g, len(named), orphans)
		if len(named) == 0 {
			t.Errorf("%s: no commit wrote change files", g)
		}
	}
}
