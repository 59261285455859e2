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
	"io"
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
