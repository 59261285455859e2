package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/table"
)

// demoConfig is the demo's pipeline: one 5-minute aggregation by event type with a 10-minute
// watermark, so the generator's outage bursts (devices delivering an hour late) arrive late.
const demoConfig = `# Written by medallion demo. Try: medallion run stream --config %[1]s
lake: %[2]s
# Small batches, so that the stream sees the data arrive over many micro-batches, as it would
# in production, and late arrivals are judged by the watermark of the batches before them.
landing: {path: landing/events/, format: json, max_files_per_trigger: 1}
schema:
  - {name: event_id,   type: string, required: true}
  - {name: event_type, type: string}
  - {name: amount,     type: double}
  - {name: event_time, type: timestamp, required: true}
  - {name: device_id,  type: string}
tables: {bronze: bronze/events, rejects: bronze/rejects, silver: silver/events}
stream:
  name: events
  watermark: 10m
  max_future_skew: 1h
  dedup: [event_id]
  trigger: available-now
  max_files_per_trigger: 1
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates:
      - {fn: count, as: count}
      - {fn: sum, column: amount, as: total_amount}
      - {fn: avg, column: amount, as: avg_amount}
# A second source: clicks on the events, some of them delivered hours late; and a join of the
# two (docs/joins.md): every event with the clicks within an hour after it.
sources:
  - name: clicks
    landing: {path: landing/clicks/, format: json, max_files_per_trigger: 1}
    schema:
      - {name: click_id,   type: string, required: true}
      - {name: event_id,   type: string, required: true}
      - {name: click_time, type: timestamp, required: true}
    tables: {bronze: bronze/clicks, silver: silver/clicks}
    stream: {event_time: click_time, watermark: 10m, dedup: [click_id], max_files_per_trigger: 1}
joins:
  - name: events_clicks
    left: events
    right: clicks
    type: left_outer
    on: [{left: event_id, right: event_id}]
    time: {lower: 0s, upper: 1h}           # click_time BETWEEN event_time AND event_time + 1 hour
log: {level: warn}
`

// demoJoin is the demo config's join.
const demoJoin = "events_clicks"

func newDemoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo [--lake DIR]",
		Short: "Generate sample events into a local lake, run every job once, show the result",
		Long: `demo creates a local lake (./lake unless --lake is given) with a pipeline config in it, generates
events with realistic late arrivals, and runs ingest, stream and merge-late once, printing what each
table holds, the watermark, how many rows arrived late and what merge-late changed in gold.
Running it again on the same lake adds nothing: every job is exactly once.`,
		Args: cobra.NoArgs,
		RunE: runDemo,
	}
	cmd.Flags().String("lake", "./lake", "directory of the local lake")
	cmd.Flags().Int64("events", 200_000, "lines to generate")
	return cmd
}

func runDemo(cmd *cobra.Command, _ []string) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	lakeFlag, _ := cmd.Flags().GetString("lake")
	events, _ := cmd.Flags().GetInt64("events")
	if events <= 0 {
		return usageError("demo: --events must be positive")
	}
	lakeDir, err := filepath.Abs(lakeFlag)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(lakeDir, 0o755); err != nil {
		return fmt.Errorf("demo: create %s: %w", lakeDir, err)
	}
	cfgPath := filepath.Join(lakeDir, "pipeline.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, demoConfig, cfgPath, lakeDir), 0o644); err != nil {
		return fmt.Errorf("demo: write %s: %w", cfgPath, err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	env, err := jobs.NewEnv(ctx, cfg, newLogger(cfg.Log, cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	defer env.Lake.Close()
	fmt.Fprintf(out, "medallion demo: a local lake in %s (config %s)\n\n", lakeDir, cfgPath)

	step := func(n int, name string) func(format string, args ...any) {
		began := time.Now()
		fmt.Fprintf(out, "[%d/4] %-11s", n, name)
		return func(format string, args ...any) {
			fmt.Fprintf(out, format, args...)
			fmt.Fprintf(out, "  (%.1fs)\n", time.Since(began).Seconds())
		}
	}

	// 1. Events with late arrivals into landing, arriving over the last three hours (so that
	// ingest time minus event time is a realistic lag). A lake that has landing data already
	// keeps it: the demo then only shows that every job is exactly once.
	arrivals, err := demoLanding(ctx, env, events, step(1, "gen"), out)
	if err != nil {
		return err
	}

	// 2. Ingest, each object as if ingest ran when its last line arrived, so that the ingest
	// time minus the event time (medallion lag) is the lag a scheduled ingest would see.
	done := step(2, "ingest")
	var ing bronze.Report
	_, err = jobs.Logged(ctx, env, "ingest", "", func(ctx context.Context, env jobs.Env) (bronze.Report, error) {
		err := demoIngest(ctx, env, arrivals, &ing)
		return ing, err
	})
	if err != nil {
		return err
	}
	done("bronze +%s, rejects +%s %s", count(ing.Rows, "row"), num(ing.Rejected), reasons(ing.RejectsBy))

	// 3. Stream.
	done = step(3, "stream")
	rep, err := jobs.Logged(ctx, env, "stream", cfg.Stream.Name, func(ctx context.Context, env jobs.Env) (stream.Report, error) {
		return jobs.Stream(ctx, env, config.Trigger{}, nil)
	})
	if err != nil {
		return fmt.Errorf("demo: stream: %w", err)
	}
	done("%s: silver +%s, %s dropped, %s rejected; watermark %s",
		count(int64(rep.Batches), "micro-batch"), count(rep.SilverRows, "row"), count(rep.Duplicates, "duplicate"), count(rep.Rejected, "row"),
		time.UnixMilli(rep.WatermarkMs).UTC().Format(time.RFC3339))
	for _, g := range rep.Gold {
		fmt.Fprintf(out, "            gold %s: +%s; %s quarantined (Spark would have dropped them, reporting %s)\n",
			g.Name, count(g.RowsOut, "window"), count(g.LateRows, "late row"), count(g.LateGroups, "late group"))
	}
	joinsOK, err := demoStreamJoin(ctx, env, out)
	if err != nil {
		return err
	}

	// 4. Merge-late.
	done = step(4, "merge-late")
	g := cfg.Gold[0]
	goldTable := table.Open(objstore.WithPrefix(env.Lake, g.Table), table.Options{})
	before, err := goldRows(ctx, goldTable, g)
	if err != nil {
		return err
	}
	merged, err := demoMergeLate(ctx, env)
	if err != nil {
		return fmt.Errorf("demo: merge-late: %w", err)
	}
	done("%s", merged)
	after, err := goldRows(ctx, goldTable, g)
	if err != nil {
		return err
	}
	printChanges(out, g, before, after)
	if joinsOK {
		if err := demoMergeJoin(ctx, env, out); err != nil {
			return err
		}
	}

	printDemoTables(ctx, out, env, lakeFlag, cfgPath)
	return nil
}

// demoLanding is the demo's first step: events with late arrivals into landing, arriving over
// the last three hours (so that ingest time minus event time is a realistic lag), and clicks
// on them. A lake that has landing data already keeps it: the demo then only shows that every
// job is exactly once. It returns the objects in the order they arrived.
func demoLanding(ctx context.Context, env jobs.Env, events int64, done func(format string, args ...any), out io.Writer) ([]arrival, error) {
	existing, err := objstore.ListAll(ctx, env.Lake, env.Config.Landing.Path, objstore.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("demo: list landing: %w", err)
	}
	if len(existing) > 0 {
		done("landing already holds %s; generating nothing new", count(int64(len(existing)), "object"))
		return nil, nil
	}
	arrivals, err := demoGen(ctx, env, events, done)
	if err != nil {
		return nil, err
	}
	clicks, err := demoClicks(ctx, env, arrivals, out)
	if err != nil {
		return nil, err
	}
	// Ingest sees both sources' objects in the order they arrived.
	arrivals = append(arrivals, clicks...)
	sort.SliceStable(arrivals, func(i, j int) bool { return arrivals[i].end.Before(arrivals[j].end) })
	return arrivals, nil
}

// printDemoTables ends the demo: every table with its version, rows and files, and the
// commands to explore them (paths under lakeFlag, as the user gave it).
func printDemoTables(ctx context.Context, out io.Writer, env jobs.Env, lakeFlag, cfgPath string) {
	cfg, g := env.Config, env.Config.Gold[0]
	rel := func(p string) string { return filepath.Join(lakeFlag, p) }
	fmt.Fprintf(out, "\nTables (every one a Delta table that Spark, delta-rs, DuckDB and Polars read):\n")
	for _, p := range jobs.TablePaths(env) {
		t := table.Open(objstore.WithPrefix(env.Lake, p), table.Options{})
		snap, err := t.Log().Snapshot(ctx)
		if err != nil {
			fmt.Fprintf(out, "  %-22s (not created)\n", p)
			continue
		}
		rows, _ := countRows(ctx, t)
		fmt.Fprintf(out, "  %-22s version %-3d %8s %-4s in %s\n", p, snap.Version(), num(rows), noun(rows, "row"), count(int64(len(snap.Files())), "file"))
	}
	fmt.Fprintf(out, `
Explore:
  medallion table scan %s --format table
  medallion table history %s
  medallion table scan %s --format jsonl | head
  medallion lag --config %s                 # how late events arrive; the watermark to choose
  medallion report --config %s --html report.html
  medallion run stream --config %s          # run again: exactly once, nothing changes
  medallion serve --config %s               # the jobs on a schedule, metrics on :9464
`, rel(g.Table), rel(g.Table), rel(cfg.Tables.Rejects), cfgPath, cfgPath, cfgPath, cfgPath)
}

// demoIngest ingests the demo's arrivals into ing, each object as if ingest ran when its last
// line arrived, then anything else in landing.
func demoIngest(ctx context.Context, env jobs.Env, arrivals []arrival, ing *bronze.Report) error {
	for _, a := range arrivals {
		at := a.end
		envAt := env
		envAt.Clock = func() time.Time { return at }
		rep, err := jobs.IngestKeys(ctx, envAt, []string{a.key})
		if err != nil {
			return fmt.Errorf("demo: ingest %s: %w", a.key, err)
		}
		ing.Rows, ing.Rejected = ing.Rows+rep.Rows, ing.Rejected+rep.Rejected
		for k, v := range rep.RejectsBy {
			if ing.RejectsBy == nil {
				ing.RejectsBy = map[string]int64{}
			}
			ing.RejectsBy[k] += v
		}
	}
	rests, err := jobs.IngestSources(ctx, env, "", nil) // anything else in landing (a rerun: nothing)
	if err != nil {
		return fmt.Errorf("demo: ingest: %w", err)
	}
	for _, rest := range rests {
		ing.Rows, ing.Rejected = ing.Rows+rest.Rows, ing.Rejected+rest.Rejected
	}
	return nil
}

// arrival is a landing object and when its last line arrived.
type arrival struct {
	key string
	end time.Time
}

// demoGen writes the demo's events: about three hours of arrivals ending now.
func demoGen(ctx context.Context, env jobs.Env, events int64, done func(string, ...any)) ([]arrival, error) {
	o := gen.DefaultOptions()
	o.Lines = events
	o.Files = 12
	o.Seed = 42
	o.OutageRate = 0.0001 // about 20 devices deliver an hour of buffered events late
	o.Rate = float64(events) / (3 * 3600)
	o.Start = time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
	o.Prefix = env.Config.Landing.Path
	st, err := gen.Generate(ctx, env.Lake, o)
	if err != nil {
		return nil, fmt.Errorf("demo: gen: %w", err)
	}
	done("%s in %s under %s (%s, %s malformed, %s delivered an hour late)",
		count(st.Lines, "line"), count(int64(st.Files), "object"), o.Prefix, count(st.Duplicates, "duplicate"), num(st.Malformed), count(st.OutageEvents, "outage event"))
	// Objects hold equal shares of the lines, in arrival order, at o.Rate lines a second.
	perFile := float64(st.Lines) / float64(len(st.Keys))
	var out []arrival
	for i, key := range st.Keys {
		end := o.Start.Add(time.Duration(float64(i+1) * perFile / o.Rate * float64(time.Second)))
		out = append(out, arrival{key: key, end: end})
	}
	return out, nil
}

// demoMergeLate runs merge-late and describes what it did to each gold table.
func demoMergeLate(ctx context.Context, env jobs.Env) (string, error) {
	rep, err := jobs.Logged(ctx, env, "merge-late", "", func(ctx context.Context, env jobs.Env) (late.MergeReport, error) {
		return jobs.MergeLate(ctx, env, "")
	})
	if err != nil {
		return "", err
	}
	var parts []string
	for _, g := range rep.Gold {
		if g.Gold == nil {
			parts = append(parts, fmt.Sprintf("%s: nothing new to merge", g.Name))
			continue
		}
		// The commit's figures, read through their JSON form.
		var c struct {
			Version      int64 `json:"version"`
			Updated      int64 `json:"windowsUpdated"`
			Inserted     int64 `json:"windowsInserted"`
			FilesRead    int64 `json:"filesRead"`
			FilesRemoved int64 `json:"filesRemoved"`
			BytesRemoved int64 `json:"bytesRemoved"`
			BytesAdded   int64 `json:"bytesAdded"`
		}
		b, _ := json.Marshal(g.Gold)
		_ = json.Unmarshal(b, &c)
		parts = append(parts, fmt.Sprintf("%s: %s merged in one commit (version %d): %s updated, %d inserted; %s rewritten",
			g.Name, count(g.LateRows, "late row"), c.Version, count(c.Updated, "window"), c.Inserted, count(int64(c.FilesRemoved), "file")))
	}
	return strings.Join(parts, "; "), nil
}

type goldKey struct {
	start int64
	key   string
}

// goldRows reads gold as window start + group key -> the row's first aggregate (count).
func goldRows(ctx context.Context, t *table.Table, g config.Gold) (map[goldKey]int64, error) {
	rows := map[goldKey]int64{}
	if _, err := t.Log().Snapshot(ctx); err != nil {
		return rows, nil // no gold yet
	}
	cols := append([]string{"window"}, g.GroupBy...)
	cols = append(cols, g.Aggregates[0].As)
	for b, err := range t.Scan(ctx, table.ScanOptions{Columns: cols}) {
		if err != nil {
			return nil, fmt.Errorf("demo: read %s: %w", g.Table, err)
		}
		win := b.Columns[0].Children[0]
		agg := b.Columns[len(cols)-1]
		for i := 0; i < b.Len(); i++ {
			var key []string
			for k := range g.GroupBy {
				key = append(key, b.Columns[1+k].StringAt(i))
			}
			rows[goldKey{win.Int64[i], strings.Join(key, ",")}] += agg.Int64[i]
		}
	}
	return rows, nil
}

func printChanges(out io.Writer, g config.Gold, before, after map[goldKey]int64) {
	var changed []goldKey
	for k, v := range after {
		if before[k] != v {
			changed = append(changed, k)
		}
	}
	if len(changed) == 0 {
		return
	}
	sort.Slice(changed, func(i, j int) bool {
		if changed[i].start != changed[j].start {
			return changed[i].start < changed[j].start
		}
		return changed[i].key < changed[j].key
	})
	fmt.Fprintf(out, "            %d gold windows changed; the first ones:\n", len(changed))
	fmt.Fprintf(out, "              %-20s  %-14s  %s before -> after\n", "window start", strings.Join(g.GroupBy, ","), g.Aggregates[0].As)
	for _, k := range changed[:min(8, len(changed))] {
		fmt.Fprintf(out, "              %-20s  %-14s  %d -> %d\n", time.UnixMicro(k.start).UTC().Format("2006-01-02 15:04"), k.key, before[k], after[k])
	}
}

func countRows(ctx context.Context, t *table.Table) (int64, error) {
	snap, err := t.Log().Snapshot(ctx)
	if err != nil {
		return 0, err
	}
	schema, err := snap.Schema()
	if err != nil || len(schema.Fields) == 0 {
		return 0, err
	}
	var n int64
	for b, err := range t.Scan(ctx, table.ScanOptions{Columns: []string{schema.Fields[0].Name}}) {
		if err != nil {
			return n, err
		}
		n += int64(b.Len())
	}
	return n, nil
}

func reasons(by map[string]int64) string {
	if len(by) == 0 {
		return ""
	}
	var parts []string
	for k, v := range by {
		parts = append(parts, fmt.Sprintf("%s %s", k, num(v)))
	}
	sort.Strings(parts)
	return "(" + strings.Join(parts, ", ") + ")"
}

// num prints an integer with thousands separators.
// count is n and the noun, singular or plural as n asks: "1 file", "12 files", "3 micro-batches".
func count(n int64, singular string) string { return num(n) + " " + noun(n, singular) }

// noun is the singular or the plural (English: +s, +es after ch, sh, s or x) of a noun for n.
func noun(n int64, singular string) string {
	if n == 1 {
		return singular
	}
	for _, end := range []string{"ch", "sh", "s", "x"} {
		if strings.HasSuffix(singular, end) {
			return singular + "es"
		}
	}
	return singular + "s"
}

func num(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
