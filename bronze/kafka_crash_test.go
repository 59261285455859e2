package bronze

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
)

// TestKafkaChildProcess is the ingest process that TestKafkaExactlyOnceAcrossKills starts and
// SIGKILLs; run on its own (no MEDALLION_KAFKA_CHILD_LAKE), it does nothing.
func TestKafkaChildProcess(t *testing.T) {
	dir := os.Getenv("MEDALLION_KAFKA_CHILD_LAKE")
	if dir == "" {
		return
	}
	lake, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := kafkaOptions(strings.Split(os.Getenv("MEDALLION_TEST_KAFKA_BROKERS"), ","), os.Getenv("MEDALLION_KAFKA_CHILD_TOPIC"))
	opts.MaxRecordsPerTrigger = 400
	if _, err := runKafka(t, lake, opts); err != nil {
		t.Fatal(err)
	}
}

// TestKafkaExactlyOnceAcrossKills: ingest processes SIGKILLed at random instants (while records
// keep arriving), then one run to the end: every record is in bronze or rejects exactly once.
// MEDALLION_KAFKA_KILLS sets the number of kills (default 4; the long loop: a few hundred).
func TestKafkaExactlyOnceAcrossKills(t *testing.T) {
	brokers := kafkaBrokers(t)
	kills := 4
	if v := os.Getenv("MEDALLION_KAFKA_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("MEDALLION_KAFKA_KILLS=%q: %v", v, err)
		}
		kills = n
	}
	topic := newTopic(t, brokers, 4)
	cl := kafkaClient(t, brokers)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	want := newProduced()
	produce(t, cl, topic, 4, 15000, rng, 30, 4096, want)
	dir := t.TempDir()
	killedMidBatch := 0
	for i := 0; i < kills; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKafkaChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MEDALLION_KAFKA_CHILD_LAKE="+dir, "MEDALLION_KAFKA_CHILD_TOPIC="+topic)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The child's start (exec, broker metadata) takes tens of milliseconds; a batch of 400
		// records about as long: kills land before, inside and between batches.
		time.Sleep(time.Duration(20+rng.IntN(600)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			killedMidBatch++
		}
		produce(t, cl, topic, 4, 1000, rng, 30, 4096, want)
	}
	if killedMidBatch == 0 && kills > 0 {
		t.Fatal("every child finished before its kill: the test killed nothing")
	}
	t.Logf("%d of %d children killed while running", killedMidBatch, kills)
	lake, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := kafkaOptions(brokers, topic)
	if _, err := runKafka(t, lake, opts); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, lake, topic, want)
}

// privateBroker starts a broker of its own with scripts/kafka.sh (its own state file, stopped at
// the end of the test), for a test that kills it: the shared broker serves tests of other
// packages running at the same time. It returns the brokers and the script's environment.
func privateBroker(t *testing.T) ([]string, []string) {
	t.Helper()
	kafkaBrokers(t) // the same skip-or-fail rule as every Kafka test
	script, err := filepath.Abs("../scripts/kafka.sh")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "MEDALLION_KAFKA_STATE="+filepath.Join(t.TempDir(), "kafka.state"))
	start := exec.Command(script, "start")
	start.Env = env
	out, err := start.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kafka.sh start: %v\n%s", err, stderr)
	}
	t.Cleanup(func() {
		stop := exec.Command(script, "stop")
		stop.Env = env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("kafka.sh stop: %v\n%s", err, out)
		}
	})
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "export MEDALLION_TEST_KAFKA_BROKERS="); ok {
			return strings.Split(v, ","), env
		}
	}
	t.Fatalf("kafka.sh start printed no MEDALLION_TEST_KAFKA_BROKERS:\n%s", out)
	return nil, nil
}

// TestKafkaBrokerRestartMidRun: the broker is killed (kill -9) and restarted while an ingest run
// is reading: the run waits it out, and bronze holds each record once. The broker is the test's
// own, so that the kill does not disturb other packages' tests.
func TestKafkaBrokerRestartMidRun(t *testing.T) {
	brokers, env := privateBroker(t)
	script, err := filepath.Abs("../scripts/kafka.sh")
	if err != nil {
		t.Fatal(err)
	}
	topic := newTopic(t, brokers, 4)
	cl := kafkaClient(t, brokers)
	rng := rand.New(rand.NewPCG(11, 12))
	want := newProduced()
	produce(t, cl, topic, 4, 20000, rng, 50, 4096, want)
	lake := fileLake(t)
	opts := kafkaOptions(brokers, topic)
	opts.MaxRecordsPerTrigger = 1000
	opts.StallTimeout = 2 * time.Minute
	type result struct {
		rep Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		x, err := NewKafkaIngester(lake, opts)
		if err != nil {
			done <- result{err: err}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		rep, err := x.Run(ctx)
		done <- result{rep, err}
	}()
	// Restart once the run has committed a batch and is into the next ones.
	ckpt := objstore.WithPrefix(lake, opts.CheckpointPath)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := ckpt.Stat(context.Background(), commitKey(1)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run committed no second batch within 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := ckpt.Stat(context.Background(), commitKey(19)); err == nil {
		t.Fatal("the run committed its last batch before the restart: it would prove nothing")
	}
	restart := exec.Command(script, "restart")
	restart.Env = env
	if out, err := restart.CombinedOutput(); err != nil {
		t.Fatalf("kafka.sh restart: %v\n%s", err, out)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("ingest across the broker restart: %v", r.err)
	}
	if r.rep.Batches != 20 {
		t.Fatalf("%d batches, want 20 (20000 offsets, 1000 a batch)", r.rep.Batches)
	}
	checkExactlyOnce(t, lake, topic, want)
}

// TestKafkaClusterIDsNeverLookLikeOptions: the cluster ids scripts/kafka.sh formats a broker's
// storage with never start with "-". One in 64 did (URL-safe base64 of a random UUID), and the
// storage tool read it as an option, so one broker start in 64 failed ("argument
// --cluster-id/-t: expected one argument"; CI lost a run to it).
func TestKafkaClusterIDsNeverLookLikeOptions(t *testing.T) {
	script, err := filepath.Abs("../scripts/kafka.sh")
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000 // before the fix, all of them were free of "-" only once in e^78
	out, err := exec.Command("bash", script, "cluster-ids", strconv.Itoa(n)).Output()
	if err != nil {
		t.Fatalf("kafka.sh cluster-ids: %v", err)
	}
	ids := strings.Fields(string(out))
	if len(ids) != n {
		t.Fatalf("%d ids, want %d", len(ids), n)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if strings.HasPrefix(id, "-") || len(id) != 22 || seen[id] {
			t.Fatalf("cluster id %q: starts with -, is not 22 characters, or repeats", id)
		}
		seen[id] = true
	}
}
