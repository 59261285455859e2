package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/medallion-lake/medallion/config"
)

// Func is one job: it runs once and returns a summary for logs and status.
type Func func(ctx context.Context, env Env) (any, error)

// Scheduled is a job with its cron schedule and time limit. A job with After set also runs
// right after each successful run of the job of that name (a chain: ingest, then stream), or
// of each job of a comma-separated list.
type Scheduled struct {
	Name     string
	Schedule string
	After    string
	Timeout  time.Duration
	Run      Func
}

// Status is what a status page or /healthz shows about a job.
type Status struct {
	Name        string    `json:"name"`
	Schedule    string    `json:"schedule"`
	After       string    `json:"after,omitempty"`
	Running     bool      `json:"running"`
	LastStart   time.Time `json:"last_start,omitzero"`
	LastEnd     time.Time `json:"last_end,omitzero"`
	LastResult  string    `json:"last_result,omitempty"` // ok, error, skipped (lease held)
	LastError   string    `json:"last_error,omitempty"`
	LastSummary any       `json:"last_summary,omitempty"`
	Runs        int64     `json:"runs"`
	Failures    int64     `json:"failures"`
	NextRun     time.Time `json:"next_run,omitzero"`
}

// Scheduler runs jobs on their cron schedules (UTC, seconds optional), never two runs of one job
// at once: within a process SkipIfStillRunning, across processes a lease per job. A panicking
// job is recovered and counted as a failure.
type Scheduler struct {
	env     Env
	leases  *Leases
	cron    *cron.Cron
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	status  map[string]*Status
	entries map[string]cron.EntryID
	// Chains: the jobs to run after each job; busy and again keep one run of a job at a time in
	// this process (a chained run may meet a scheduled one) without losing a trigger; chained
	// counts the chained runs under way, which Stop waits for.
	jobs     map[string]Scheduled
	after    map[string][]Scheduled
	busy     map[string]bool
	again    map[string]bool
	stopping bool
	chained  sync.WaitGroup
	// observe, when set, sees each successful run's summary (the pipeline metrics).
	observe func(job string, summary any)

	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	running  *prometheus.GaugeVec
	lastOK   *prometheus.GaugeVec
}

// NewScheduler prepares the jobs; Start runs them. Metrics are registered on reg.
func NewScheduler(env Env, leases *Leases, reg prometheus.Registerer, jobs []Scheduled) (*Scheduler, error) {
	s := &Scheduler{
		env: env, leases: leases, log: env.Logger.With("component", "scheduler"),
		status: map[string]*Status{}, entries: map[string]cron.EntryID{},
		jobs: map[string]Scheduled{}, after: map[string][]Scheduled{}, busy: map[string]bool{}, again: map[string]bool{},
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "medallion_job_runs_total", Help: "Job runs by result (ok, error, skipped).",
		}, []string{"job", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "medallion_job_duration_seconds", Help: "Duration of job runs.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
		}, []string{"job"}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "medallion_job_running", Help: "1 while the job runs in this process.",
		}, []string{"job"}),
		lastOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "medallion_job_last_success_timestamp_seconds", Help: "When the job last succeeded.",
		}, []string{"job"}),
	}
	for _, c := range []prometheus.Collector{s.runs, s.duration, s.running, s.lastOK} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("jobs: register metrics: %w", err)
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.cron = cron.New(
		cron.WithLocation(time.UTC),
		cron.WithParser(cron.NewParser(cron.SecondOptional|cron.Minute|cron.Hour|cron.Dom|cron.Month|cron.Dow|cron.Descriptor)),
		cron.WithChain(cron.SkipIfStillRunning(cronLogger{s.log})),
		cron.WithLogger(cronLogger{s.log}),
	)
	for _, j := range jobs {
		if j.Schedule == "" && j.After == "" {
			continue
		}
		s.status[j.Name] = &Status{Name: j.Name, Schedule: j.Schedule, After: j.After}
		s.jobs[j.Name] = j
		for _, prev := range strings.Split(j.After, ",") {
			if prev != "" { // After may name several jobs: publish runs after each that changes tables
				s.after[prev] = append(s.after[prev], j)
			}
		}
		if j.Schedule != "" {
			if _, err := config.ParseSchedule(j.Schedule); err != nil {
				return nil, fmt.Errorf("jobs: %s schedule %q: %w", j.Name, j.Schedule, err)
			}
			id, err := s.cron.AddFunc(j.Schedule, func() { s.runOnce(j) })
			if err != nil {
				return nil, fmt.Errorf("jobs: %s schedule %q: %w", j.Name, j.Schedule, err)
			}
			s.entries[j.Name] = id
		}
		for _, r := range []string{"ok", "error", "skipped"} {
			s.runs.WithLabelValues(j.Name, r) // expose every series from the start
		}
		s.running.WithLabelValues(j.Name).Set(0)
	}
	return s, nil
}

// Start begins running the schedules.
func (s *Scheduler) Start() { s.cron.Start() }

// Stop stops scheduling, asks running jobs to stop at a safe point (their context is cancelled
// once ctx is done), and waits for them.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true // no new chained runs
	s.mu.Unlock()
	cronDone := s.cron.Stop().Done()
	done := make(chan struct{})
	go func() {
		<-cronDone
		s.chained.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.cancel() // jobs see their context end and stop at the next safe point
		select {
		case <-done:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("jobs: running jobs did not stop in time")
		}
	}
}

// Statuses lists every scheduled job, by name.
func (s *Scheduler) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.status))
	for name, st := range s.status {
		cp := *st
		if id, ok := s.entries[name]; ok {
			cp.NextRun = s.cron.Entry(id).Next
		}
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Scheduler) update(name string, f func(*Status)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.status[name])
}

// runOnce runs the job under its lease, unless a run of it is under way in this process: then
// that run is followed by one more, so a trigger that came during it (new data) is not lost.
func (s *Scheduler) runOnce(j Scheduled) {
	s.mu.Lock()
	if s.busy[j.Name] {
		s.again[j.Name] = true
		s.mu.Unlock()
		return
	}
	s.busy[j.Name] = true
	s.mu.Unlock()
	for {
		s.runLeased(j)
		s.mu.Lock()
		again := s.again[j.Name] && !s.stopping
		s.again[j.Name] = false
		if !again {
			s.busy[j.Name] = false
		}
		s.mu.Unlock()
		if !again {
			return
		}
	}
}

// RunNow starts a run of the named job at once, outside its schedule (in its own goroutine,
// which Stop waits for), as if its schedule had fired; false when no such job is scheduled.
func (s *Scheduler) RunNow(name string) bool {
	s.mu.Lock()
	j, ok := s.jobs[name]
	if !ok || s.stopping {
		s.mu.Unlock()
		return false
	}
	s.chained.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.chained.Done()
		s.runOnce(j)
	}()
	return true
}

// trigger starts the jobs chained after name (jobs.<job>.after), each in its own goroutine.
func (s *Scheduler) trigger(name string) {
	for _, j := range s.after[name] {
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			return
		}
		s.chained.Add(1)
		s.mu.Unlock()
		s.log.Debug("chained run", "job", j.Name, "after", name)
		go func() {
			defer s.chained.Done()
			s.runOnce(j)
		}()
	}
}

// runLeased runs one execution under the job's lease.
func (s *Scheduler) runLeased(j Scheduled) {
	log := s.log.With("job", j.Name)
	lease, err := s.leases.Acquire(s.ctx, j.Name)
	if err != nil {
		s.runs.WithLabelValues(j.Name, "skipped").Inc()
		s.update(j.Name, func(st *Status) { st.LastResult, st.LastError = "skipped", err.Error() })
		log.Info("run skipped", "reason", err)
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	stop := context.AfterFunc(lease.Context(), cancel) // a lost lease stops the run
	if j.Timeout > 0 {
		var tcancel context.CancelFunc
		ctx, tcancel = context.WithTimeout(ctx, j.Timeout)
		defer tcancel()
	}
	start := time.Now()
	s.running.WithLabelValues(j.Name).Set(1)
	s.update(j.Name, func(st *Status) { st.Running, st.LastStart = true, start })
	// The event log gets the run's row, a panic's included.
	summary, err := RunLogged(ctx, s.env, j.Name, "", func(ctx context.Context, env Env) (any, error) { return s.protect(ctx, j, env) })
	stop()
	cancel()
	if rerr := lease.Release(context.Background()); rerr != nil {
		log.Warn("lease release failed; it will expire", "err", rerr)
	}
	s.running.WithLabelValues(j.Name).Set(0)
	s.Record(j.Name, start, summary, err)
}

// Record counts a run of job name that happened outside the schedule (an ingest triggered by a
// webhook notification) exactly as a scheduled one: in Statuses (so /healthz, /api/status and
// the status page), medallion_job_runs_total, the duration histogram and the last-success time.
func (s *Scheduler) Record(name string, start time.Time, summary any, err error) {
	log := s.log.With("job", name)
	elapsed := time.Since(start)
	s.duration.WithLabelValues(name).Observe(elapsed.Seconds())
	result := "ok"
	if err != nil {
		result = "error"
		log.Error("run failed", "err", err, "seconds", seconds(elapsed))
	} else {
		s.lastOK.WithLabelValues(name).SetToCurrentTime()
		log.Info("run finished", "seconds", seconds(elapsed), "summary", summary)
	}
	s.runs.WithLabelValues(name, result).Inc()
	s.mu.Lock()
	st := s.status[name]
	if st == nil {
		st = &Status{Name: name}
		s.status[name] = st
	}
	st.LastStart, st.LastEnd, st.LastResult, st.LastSummary = start, time.Now(), result, summary
	st.Running = false // runs of one job never overlap: the job's lease serialises them
	st.Runs++
	st.LastError = ""
	if err != nil {
		st.Failures++
		st.LastError = err.Error()
	}
	observe := s.observe
	s.mu.Unlock()
	if err == nil {
		if observe != nil {
			observe(name, summary)
		}
		s.trigger(name)
	}
}

// seconds is a duration for logs: seconds with millisecond precision (a time.Duration would be
// logged in nanoseconds by the JSON handler).
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// protect turns a panic in a job into an error, so one bad run never takes serve down.
func (s *Scheduler) protect(ctx context.Context, j Scheduled, env Env) (summary any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("jobs: %s panicked: %v\n%s", j.Name, r, debug.Stack())
		}
	}()
	return j.Run(ctx, env)
}

// cronLogger adapts slog to robfig/cron's logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug(msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error(msg, append(kv, "err", err)...)
}
