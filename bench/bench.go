// Package bench owns the side-by-side benchmark report: the measurements of each pipeline
// stage run as a separate process (medallion, and the Spark and delta-rs anchors on the same
// data), the ratio table, the Markdown of bench/RESULTS.md and its SVG plot.
//
// It only renders what the harness (bench/cmd/benchrun) measured; it writes nothing itself,
// so a crash leaves nothing behind and a rerun of the harness regenerates everything.
package bench

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Engines and stages as they appear in the report.
const (
	EngineOurs    = "medallion"
	EngineSpark   = "spark"
	EngineDeltaRS = "delta-rs"
	// The job `medallion export spark` prints, keeping the promise, and with --plain (Spark's
	// own aggregation): what the promise costs on Spark.
	EngineSparkExport = "spark-export"
	EngineSparkPlain  = "spark-export-plain"

	StageGen       = "gen"
	StageIngest    = "ingest"
	StageStream    = "stream"
	StageMergeLate = "merge-late"
	StageReplay    = "replay-24h"
	StageEndToEnd  = "end-to-end"

	// The backlog stages run ingest and stream again on a second lake of the same workload,
	// with the large triggers a user who wants throughput configures. They are ours only:
	// no anchor is paired with them (Pairs does not name them) and the plot leaves them out.
	StageIngestBacklog = "ingest-backlog"
	StageStreamBacklog = "stream-backlog"

	// The Kafka stages (bench/run.sh --kafka): gen produces the case's records into a topic of
	// a local broker, then our ingest (landing.kind kafka) and Spark's Kafka source each write a
	// Delta bronze table from the whole topic. The plot leaves them out.
	StageKafkaGen    = "kafka-gen"
	StageKafkaIngest = "kafka-ingest"

	// The join stage (bench/run.sh --join, issue 18): the same micro-batch files through
	// medallion's stream-stream join operator (bench/cmd/joinbench) and Spark's
	// (bench/spark_join.py). Its case's events count both sides and its keys are the distinct
	// join keys of the left side. The plot leaves it out.
	StageJoin = "join"
)

// Run is one measured child process (or, for end to end, the sum of several).
type Run struct {
	Engine  string
	Stage   string
	Backend string // "file" or "minio"
	Events  int64  // landing lines the stage is measured against
	Keys    int    // distinct group-by keys of the workload
	// InputBytes is the landing data size, for MB/s.
	InputBytes int64
	WallS      float64
	CPUS       float64 // user + sys, from the child's rusage
	MaxRSSKB   int64   // ru_maxrss of the child (its largest waited-for descendant included)
	Objects    int64   // objects written by the stage
	Bytes      int64   // bytes written by the stage
	// Status is "ok", "skipped: why" or "failed: why".
	Status string
	// Detail is what the stage itself reported (rows in and out), for the sanity checks.
	Detail string
	// Load is the machine's 1-, 5- and 15-minute load average (/proc/loadavg) as the stage
	// began: on a shared machine wall time says little without it, CPU seconds more.
	Load string
	// StateBytesPerRow is, for our join stage, the join state's bytes per buffered row at its
	// peak row count (join.Operator.StateBytes / StateRows); 0 elsewhere.
	StateBytesPerRow float64
}

// OK reports whether the run completed and its numbers mean something.
func (r Run) OK() bool { return r.Status == "ok" }

// EventsPerS is the throughput in landing lines per wall second.
func (r Run) EventsPerS() float64 { return safeDiv(float64(r.Events), r.WallS) }

// MBPerS is the landing data (MB, 10^6 bytes) processed per wall second.
func (r Run) MBPerS() float64 { return safeDiv(float64(r.InputBytes)/1e6, r.WallS) }

// CPUPerEventUS is the CPU time per event in microseconds.
func (r Run) CPUPerEventUS() float64 { return safeDiv(r.CPUS*1e6, float64(r.Events)) }

// CPUPerEventNS is the CPU time per event in nanoseconds.
func (r Run) CPUPerEventNS() float64 { return safeDiv(r.CPUS*1e9, float64(r.Events)) }

func safeDiv(a, b float64) float64 {
	if b <= 0 {
		return math.NaN()
	}
	return a / b
}

// Sum combines stages run one after the other into one run: wall, CPU, objects and bytes add
// up, peak RSS is the largest. It is ok only if every part is.
func Sum(stage string, parts ...Run) Run {
	if len(parts) == 0 {
		return Run{Stage: stage, Status: "skipped: no stages"}
	}
	s := parts[0]
	s.Stage, s.Detail = stage, ""
	s.WallS, s.CPUS, s.MaxRSSKB, s.Objects, s.Bytes = 0, 0, 0, 0, 0
	var names []string
	for _, p := range parts {
		names = append(names, p.Stage)
		s.WallS += p.WallS
		s.CPUS += p.CPUS
		s.MaxRSSKB = max(s.MaxRSSKB, p.MaxRSSKB)
		s.Objects += p.Objects
		s.Bytes += p.Bytes
		if !p.OK() && s.OK() {
			s.Status = p.Stage + " " + p.Status
		}
	}
	s.Detail = strings.Join(names, " + ")
	return s
}

// Case is one workload configuration.
type Case struct {
	Events  int64
	Keys    int
	Backend string
}

func (c Case) String() string {
	return fmt.Sprintf("%s events, %s keys, %s", Count(c.Events), Count(int64(c.Keys)), c.Backend)
}

// CaseOf is the workload a run belongs to.
func CaseOf(r Run) Case { return Case{Events: r.Events, Keys: r.Keys, Backend: r.Backend} }

// Pair names, for one of our stages, the anchor run it is compared with.
type Pair struct {
	Stage       string // ours
	Engine      string // the anchor
	AnchorStage string
	Why         string
}

// Pairs is the comparison the report makes. Spark's one streaming job does what our ingest and
// stream do together, so it anchors both "stream" and "end-to-end"; merge-late has no anchor
// (Spark drops late rows).
var Pairs = []Pair{
	{StageIngest, EngineDeltaRS, StageIngest, "landing JSON -> Delta table, one commit per landing file"},
	{StageStream, EngineSpark, StageStream, "Spark reads landing JSON directly; ours reads bronze"},
	{StageEndToEnd, EngineSpark, StageStream, "ingest + stream + merge-late vs Spark's streaming job"},
	{StageReplay, EngineDeltaRS, StageReplay, "recompute 24h of gold from silver, overwrite"},
	{StageKafkaIngest, EngineSpark, StageKafkaIngest, "Kafka topic -> Delta bronze, same records; Spark: Kafka source, from_json, Delta append"},
	{StageJoin, EngineSpark, StageJoin, "the same micro-batch files through a stream-stream left outer join, output discarded; ours: the join operator"},
}

// Ratio is ours/theirs for one metric; NaN when either side is missing.
type Ratio struct {
	Case                               Case
	Pair                               Pair
	Ours, Theirs                       Run
	Throughput, CPU, RSS, Wall, Writes float64
}

// Ratios pairs our runs with the anchors of the same events, keys and backend. Spark runs on the
// file backend only: MinIO cases are compared with its file run (its storage is then local disk).
func Ratios(runs []Run) []Ratio {
	find := func(engine, stage string, c Case, anyBackend bool) (Run, bool) {
		for _, r := range runs {
			if r.Engine == engine && r.Stage == stage && r.Events == c.Events && r.Keys == c.Keys &&
				(anyBackend || r.Backend == c.Backend) {
				return r, true
			}
		}
		return Run{}, false
	}
	var out []Ratio
	for _, c := range Cases(runs) {
		for _, p := range Pairs {
			ours, ok := find(EngineOurs, p.Stage, c, false)
			if !ok {
				continue
			}
			theirs, ok := find(p.Engine, p.AnchorStage, c, false)
			if !ok {
				theirs, ok = find(p.Engine, p.AnchorStage, Case{c.Events, c.Keys, "file"}, false)
			}
			if !ok {
				theirs, ok = find(p.Engine, p.AnchorStage, c, true)
			}
			rt := Ratio{Case: c, Pair: p, Ours: ours, Theirs: theirs}
			nan := math.NaN()
			rt.Throughput, rt.CPU, rt.RSS, rt.Wall, rt.Writes = nan, nan, nan, nan, nan
			if ok && ours.OK() && theirs.OK() {
				rt.Throughput = safeDiv(ours.EventsPerS(), theirs.EventsPerS())
				rt.CPU = safeDiv(ours.CPUS, theirs.CPUS)
				rt.RSS = safeDiv(float64(ours.MaxRSSKB), float64(theirs.MaxRSSKB))
				rt.Wall = safeDiv(ours.WallS, theirs.WallS)
				rt.Writes = safeDiv(float64(ours.Bytes), float64(theirs.Bytes))
			}
			out = append(out, rt)
		}
	}
	return out
}

// Cases lists the distinct workloads of our runs, smallest first, file before minio.
func Cases(runs []Run) []Case {
	seen := map[Case]bool{}
	var cs []Case
	for _, r := range runs {
		if r.Engine != EngineOurs {
			continue
		}
		c := CaseOf(r)
		if !seen[c] {
			seen[c] = true
			cs = append(cs, c)
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Events != b.Events {
			return a.Events < b.Events
		}
		if a.Keys != b.Keys {
			return a.Keys < b.Keys
		}
		return a.Backend < b.Backend
	})
	return cs
}

// Count prints 1000000 as 1M, 100000 as 100k.
func Count(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// ParseCount reads 1M, 10M, 100k or a plain number.
func ParseCount(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1_000_000, s[:len(s)-1]
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1000, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bench: %q is not a positive count such as 1M, 100k or 5000", s)
	}
	return n * mult, nil
}
