package jobs

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/medallion-lake/medallion/report"
)

// statusPage serves the live status page (/) and its figures as JSON (/api/status). Building a
// report reads the lake (the lag scans the last day of bronze), so one build serves every
// request for a few seconds.
type statusPage struct {
	env    Env
	sched  *Scheduler
	leases *Leases
	ttl    time.Duration

	mu    sync.Mutex
	built time.Time
	last  *report.Report
}

// Lookback is the event-time range of the page's lag figures.
const statusLagLookback = 24 * time.Hour

func (p *statusPage) current(ctx context.Context) (*report.Report, error) {
	r, err := p.atMost(ctx, p.ttl)
	if err != nil {
		return nil, err
	}
	return p.withJobs(ctx, r), nil
}

// atMost returns the lake's report, built again when the last one is older than maxAge.
func (p *statusPage) atMost(ctx context.Context, maxAge time.Duration) (*report.Report, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.env.clock()
	if p.last != nil && now.Sub(p.built) < maxAge {
		return p.last, nil
	}
	r, err := report.Build(ctx, p.env.Lake, p.env.Config, report.ReportOptions{
		Now: now,
		Lag: report.LagOptions{From: now.Add(-statusLagLookback), To: now},
	})
	if err != nil {
		return nil, err
	}
	r.RefreshSeconds = 10
	r.KafkaLag = KafkaLagReport(ctx, p.env)
	p.last, p.built = r, now
	return r, nil
}

// withJobs returns a copy of r with the scheduler's current job states and lease holders.
func (p *statusPage) withJobs(ctx context.Context, r *report.Report) *report.Report {
	cp := *r
	cp.Jobs = nil
	for _, st := range p.sched.Statuses() {
		holder, _ := p.leases.Holder(ctx, st.Name)
		schedule := st.Schedule
		switch {
		case st.After != "" && schedule == "":
			schedule = "after " + st.After
		case st.After != "":
			schedule += ", and after " + st.After
		}
		cp.Jobs = append(cp.Jobs, report.JobStatus{
			Name: st.Name, Schedule: schedule, Running: st.Running, LastStart: st.LastStart,
			LastEnd: st.LastEnd, LastResult: st.LastResult, LastError: st.LastError, Runs: st.Runs,
			Failures: st.Failures, NextRun: st.NextRun, LeaseHolder: holder,
		})
	}
	return &cp
}

func (p *statusPage) html(w http.ResponseWriter, r *http.Request) {
	rep, err := p.current(r.Context())
	if err != nil {
		http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

func (p *statusPage) api(w http.ResponseWriter, r *http.Request) {
	rep, err := p.current(r.Context())
	if err != nil {
		http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
		return
	}
	body, err := rep.MarshalJSON()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
