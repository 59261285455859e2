// Command benchprof runs one pipeline job in process under the CPU profiler, for the
// profiles behind bench/RESULTS.md (the medallion binary has no profiling flag):
//
//	benchprof --config pipeline.yaml --job ingest|stream|merge-late|replay --cpuprofile cpu.pprof [--trace trace.out] [--memprofile mem.pprof]
//	go tool pprof -top -nodecount 30 cpu.pprof
//	go tool pprof -sample_index=alloc_space -top mem.pprof  # who allocates the bytes behind peak RSS
//	go tool trace trace.out  # which goroutines ran when: where a job leaves a core idle
//	benchprof ... --peakheap peak.pprof  # the heap profile at the largest live heap the run reached
//	go tool pprof -sample_index=inuse_space -top peak.pprof  # what the live heap held at its peak
//
// It calls the same jobs functions as `medallion run`, so a profile shows the real hot path.
// It writes only what the job writes, plus the profile.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
)

func main() {
	cfgPath := flag.String("config", "", "pipeline config (YAML)")
	job := flag.String("job", "ingest", "ingest | stream | merge-late | replay (the config's lookback)")
	out := flag.String("cpuprofile", "cpu.pprof", "CPU profile to write")
	traceOut := flag.String("trace", "", "execution trace to write as well (none when empty)")
	memOut := flag.String("memprofile", "", "allocation profile to write at the end (none when empty)")
	peakOut := flag.String("peakheap", "", "heap profile to write at the run's largest live heap (none when empty)")
	flag.Parse()
	stop := func() {}
	if *peakOut != "" {
		stop = watchPeakHeap(*peakOut)
	}
	err := run(context.Background(), *cfgPath, *job, *out, *traceOut, *memOut)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchprof:", err)
		os.Exit(1)

	}
}

func run(ctx context.Context, cfgPath, job, out, traceOut, memOut string) error {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	env, err := jobs.NewEnv(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer env.Lake.Close()
	f, err := writeTo(out, pprof.StartCPUProfile)
	if err != nil {
		return err
	}
	defer f.Close()
	if traceOut != "" {
		tf, err := writeTo(traceOut, trace.Start)
		if err != nil {
			return err
		}
		defer tf.Close()
		defer trace.Stop()
	}
	var rep any
	switch job {
	case "ingest":
		rep, err = jobs.Ingest(ctx, env)
	case "stream":
		rep, err = jobs.Stream(ctx, env, config.Trigger{}, nil)
	case "merge-late":
		rep, err = jobs.MergeLate(ctx, env, "")
	case "replay":
		rep, err = jobs.ReplayLookback(ctx, env)
	default:
		err = fmt.Errorf("unknown job %q", job)
	}
	pprof.StopCPUProfile()
	if err != nil {
		return fmt.Errorf("%s: %w", job, err)
	}
	if memOut != "" {
		mf, err := writeTo(memOut, func(w io.Writer) error { return pprof.Lookup("allocs").WriteTo(w, 0) })
		if err != nil {
			return err
		}
		defer mf.Close()
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// writeTo creates the file at path and hands it to write (which starts a profile into it, or
// writes one); the caller closes the file once the profile is done.
func writeTo(path string, write func(io.Writer) error) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := write(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// watchPeakHeap polls the live heap (as of the last collection, which is what the heap
// profile shows too) every 20 ms and rewrites the heap profile at path each time the live heap
// passes its largest value so far by 2%: peak RSS is about twice the largest live heap (the
// collector's GOGC headroom), so this profile says what the peak RSS is made of. stop ends
// the polling and reports the peak on stderr.
func watchPeakHeap(path string) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > peak+peak/50 {
				peak = live
				if f, err := os.Create(path); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
		fmt.Fprintf(os.Stderr, "benchprof: peak live heap %.0f MB (profile %s)\n", float64(peak)/1e6, path)
	}
}
