package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/sink"
)

// Server is `medallion serve`: the scheduler plus an HTTP endpoint with the status page (/), its
// figures as JSON (/api/status), /metrics (Prometheus) and /healthz.
type Server struct {
	env       Env
	reg       *prometheus.Registry
	scheduler *Scheduler
	listener  net.Listener
	http      *http.Server
	started   time.Time
	// Handle lets later features (status page, webhook notifications) add routes.
	mux      *http.ServeMux
	notifier *notifier
}

func hasJob(jobs []Scheduled, name string) bool {
	for _, j := range jobs {
		if j.Name == name {
			return true
		}
	}
	return false
}

// NewServer wires the scheduler, the metrics and the HTTP routes, and binds serve.listen
// (loopback by default), so a bad address fails before anything runs.
func NewServer(env Env) (*Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	env.Lake = objstore.WithMetrics(env.Lake, reg, "lake")
	if hasKafkaSource(env.Config) {
		reg.MustRegister(newKafkaLagCollector(env))
	}
	if c := env.Events.Collector(); c != nil {
		reg.MustRegister(c) // medallion_event_log_write_failures_total
	}
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
	leases := NewLeases(env.Lake, holder, env.Config.Serve.LeaseTTL.Duration, env.Clock)
	catalog, err := withExpectationMetrics(Catalog(env), env, reg)
	if err != nil {
		return nil, err
	}
	if len(env.Config.Sinks) > 0 {
		m, err := sink.NewMetrics(reg) // medallion_change_rows_published_total
		if err != nil {
			return nil, err
		}
		for i := range catalog {
			if catalog[i].Name == "publish" {
				catalog[i].Run = publishJob(m)
			}
		}
	}
	notify := env.Config.Landing.Notify
	webhook := notify.Mode == "webhook"
	if webhook && !hasJob(catalog, "ingest") {
		// Notifications are hints; a periodic listing catches every object whose event was lost.
		catalog = append(catalog, Scheduled{Name: "ingest", Schedule: "@every " + notify.Reconcile.Duration.String(),
			Run: Lookup("ingest")}) // every source, as the scheduled ingest
	}
	sched, err := NewScheduler(env, leases, reg, catalog)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", env.Config.Serve.Listen)
	if err != nil {
		return nil, fmt.Errorf("jobs: serve.listen %s: %w", env.Config.Serve.Listen, err)
	}
	s := &Server{env: env, reg: reg, scheduler: sched, listener: ln, mux: http.NewServeMux()}
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	s.mux.HandleFunc("GET /healthz", s.healthz)
	page := &statusPage{env: env, sched: sched, leases: leases, ttl: 5 * time.Second}
	pm, err := newPipelineMetrics(env, reg, page)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("jobs: register metrics: %w", err)
	}
	sched.observe = pm.observe
	s.mux.HandleFunc("GET /{$}", page.html)
	s.mux.HandleFunc("GET /api/status", page.api)
	// Browsers ask for a favicon; answering "no content" keeps their consoles clean.
	s.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	if webhook {
		if s.notifier, err = newNotifier(env, leases, reg); err != nil {
			ln.Close()
			return nil, err
		}
		s.notifier.record = func(start time.Time, summary any, err error) { sched.Record("ingest", start, summary, err) }
		s.mux.Handle("POST "+notify.Path, s.notifier)
	}
	s.http = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Scheduler is the server's scheduler.
func (s *Server) Scheduler() *Scheduler { return s.scheduler }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status":         "ok",
		"uptime_seconds": int64(time.Since(s.started).Seconds()),
		"jobs":           s.scheduler.Statuses(),
	})
}

// Run serves until ctx is done, then shuts down gracefully: no new runs, running jobs get
// serve.shutdown_timeout to finish (then their context is cancelled so they stop at a safe
// point), then the HTTP server closes.
func (s *Server) Run(ctx context.Context) error {
	s.started = time.Now()
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(s.listener) }()
	log := s.env.Logger.With("component", "serve")
	if s.notifier != nil {
		if err := subscribeLake(ctx, s.env); err != nil {
			log.Warn("could not subscribe the bucket to notifications; ingestion falls back to listing", "err", err)
		}
		nctx, ncancel := context.WithCancel(ctx)
		ndone := make(chan struct{})
		go func() {
			defer close(ndone)
			s.notifier.run(nctx)
		}()
		// An event-driven ingest is a running job too: Run returns only after it has stopped
		// (and released its lease), as it does for scheduled jobs.
		defer func() { ncancel(); <-ndone }()
	}
	s.scheduler.Start()
	log.Info("serving", "listen", s.Addr(), "jobs", len(s.scheduler.Statuses()))
	// List the landing prefix once now: objects that landed while serve was down are not left
	// waiting a schedule period (or, with notifications, the reconcile period).
	if s.scheduler.RunNow("ingest") {
		log.Info("ingesting what landed before the start", "prefix", s.env.Config.Landing.Path)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	log.Info("shutting down")
	tctx, cancel := context.WithTimeout(context.Background(), s.env.Config.Serve.ShutdownTimeout.Duration)
	defer cancel()
	stopErr := s.scheduler.Stop(tctx)
	hctx, hcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer hcancel()
	httpErr := s.http.Shutdown(hctx)
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return errors.Join(serveErr, stopErr, httpErr)
}
