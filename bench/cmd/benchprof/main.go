// Command benchprof runs one pipeline job in process under the CPU profiler, for the
// profiles behind bench/RESULTS.md (the medallion binary has no profiling flag):
//
//	benchprof --config pipeline.yaml --job ingest|stream|merge-late|replay --cpuprofile cpu.pprof [--trace trace.out] [--memprofile mem.pprof]
//	go tool pprof -top -nodecount 30 cpu.pprof
//	go tool pprof -sample_index=alloc_space -top mem.pprof  # who allocates the bytes behind peak RSS
//	go tool trace trace.out  # which goroutines ran when: where a job leaves a core idle
//
// It calls the same jobs functions as `medallion run`, so a profile shows the real hot path.
// It writes only what the job writes, plus the profile.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
)

func main() {
	cfgPath := flag.String("config", "", "pipeline config (YAML)")
	job := flag.String("job", "ingest", "ingest | stream | merge-late | replay (the config's lookback)")
	out := flag.String("cpuprofile", "cpu.pprof", "CPU profile to write")
	traceOut := flag.String("trace", "", "execution trace to write as well (none when empty)")
	memOut := flag.String("memprofile", "", "allocation profile to write at the end (none when empty)")
	flag.Parse()
	if err := run(context.Background(), *cfgPath, *job, *out, *traceOut, *memOut); err != nil {
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
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	if traceOut != "" {
		tf, err := os.Create(traceOut)
		if err != nil {
			return err
		}
		defer tf.Close()
		if err := trace.Start(tf); err != nil {
			return err
		}
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
		mf, err := os.Create(memOut)
		if err != nil {
			return err
		}
		defer mf.Close()
		if err := pprof.Lookup("allocs").WriteTo(mf, 0); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}
