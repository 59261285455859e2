package jobs

import (
	"cmp"
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/report"
	"github.com/medallion-lake/medallion/stream"
)

// metricsMaxAge bounds how old the lake figures of a scrape may be: building them reads every
// table's log and a day of bronze for the lag, too much for every scrape.
const metricsMaxAge = time.Minute

// pipelineMetrics are the figures to alert on, beside the job metrics: rows into and out of
// each table, rejects by reason, late rows quarantined and merged (counters, from each run's
// summary), and, read from the lake at scrape time (at most metricsMaxAge old), the watermark
// and its delay, each source's watermark ahead of now, the lag p95, each table's version and the age of its last commit, and the
// state rows and state bytes (memoryUsedBytes) of each stateful operator; per join and side,
// input rows, late rows quarantined and merged, matched and unmatched rows emitted (counters),
// and its state rows and bytes and each input source's watermark (gauges, from the join's last
// progress).
type pipelineMetrics struct {
	env        Env
	rowsIn     *prometheus.CounterVec
	rowsOut    *prometheus.CounterVec
	rejects    *prometheus.CounterVec
	duplicates prometheus.Counter
	filtered   *prometheus.CounterVec
	lateQ      *prometheus.CounterVec
	lateM      *prometheus.CounterVec
	changeRows *prometheus.CounterVec // by table
	page       *statusPage

	joinIn, joinLate, joinUnmatched *prometheus.CounterVec // by join and side
	joinMatched, joinMerged         *prometheus.CounterVec // by join
	joinStateRows, joinStateBytes   *prometheus.Desc       // by join and side
	joinSourceWatermark             *prometheus.Desc       // by join and source

	watermarkAhead *prometheus.Desc // by source

	watermark, watermarkDelay, lagP95, tableAge, tableVersion, stateRows, stateBytes *prometheus.Desc
}

func newPipelineMetrics(env Env, reg prometheus.Registerer, page *statusPage) (*pipelineMetrics, error) {
	m := &pipelineMetrics{
		env: env, page: page,
		rowsIn: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_table_rows_in_total",
			Help: "Rows written into a table (landing: lines ingest read)."}, []string{"table"}),
		rowsOut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_table_rows_out_total",
			Help: "Rows read out of a table by the next job (bronze: the stream's input rows; quarantine: rows merge-late folded into gold)."}, []string{"table"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_rejects_total",
			Help: "Rows sent to the rejects table, by stage (ingest, stream) and reason."}, []string{"stage", "reason"}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Name: "medallion_duplicates_dropped_total",
			Help: "Rows the stream dropped as duplicates of an earlier event."}),
		filtered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_filtered_dropped_total",
			Help: "Rows a source's transform filter (on_filter: drop) dropped; on_filter: reject counts them in medallion_rejects_total."}, []string{"source"}),
		lateQ: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_late_rows_quarantined_total",
			Help: "Late rows the stream sent to a gold aggregation's quarantine."}, []string{"gold"}),
		lateM: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_late_rows_merged_total",
			Help: "Quarantined late rows merge-late folded into a gold table."}, []string{"gold"}),
		changeRows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_change_rows_written_total",
			Help: "Change data feed rows (insert, delete, update pre- and post-images) merge-late and replay wrote into a table's _change_data/."}, []string{"table"}),
		watermark: prometheus.NewDesc("medallion_watermark_timestamp_seconds",
			"The stream's watermark after its latest batch.", nil, nil),
		watermarkDelay: prometheus.NewDesc("medallion_watermark_delay_seconds",
			"How far the watermark is behind now.", nil, nil),
		watermarkAhead: prometheus.NewDesc("medallion_watermark_ahead_seconds",
			"How far a source's stream watermark is ahead of now (0 when behind): above 0, rows stamped now are late and go to quarantine.", []string{"source"}, nil),
		lagP95: prometheus.NewDesc("medallion_lag_p95_seconds",
			"95th percentile of ingest time minus event time over the last day of bronze.", nil, nil),
		tableAge: prometheus.NewDesc("medallion_table_last_commit_age_seconds",
			"Age of the table's latest commit (freshness).", []string{"table"}, nil),
		tableVersion: prometheus.NewDesc("medallion_table_version",
			"The table's latest version.", []string{"table"}, nil),
		stateRows: prometheus.NewDesc("medallion_state_rows",
			"Rows in a stateful operator's state after the latest batch.", []string{"operator"}, nil),
		stateBytes: prometheus.NewDesc("medallion_state_memory_bytes",
			"Memory a stateful operator's state holds after the latest batch (memoryUsedBytes of its progress).", []string{"operator"}, nil),
		joinIn: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_join_input_rows_total",
			Help: "Rows a join query read from a side's silver table."}, []string{"join", "side"}),
		joinLate: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_join_late_rows_quarantined_total",
			Help: "Input rows of a side a join judged late (Spark drops them) and sent to its quarantine."}, []string{"join", "side"}),
		joinUnmatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_join_unmatched_rows_total",
			Help: "Null-extended rows a join emitted for a side's rows that found no match in their window."}, []string{"join", "side"}),
		joinMatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_join_matched_rows_total",
			Help: "Pairs a join emitted (left_semi: left rows)."}, []string{"join"}),
		joinMerged: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "medallion_join_late_rows_merged_total",
			Help: "Quarantined input rows merge-late joined into the joined table."}, []string{"join"}),
		joinStateRows: prometheus.NewDesc("medallion_join_state_rows",
			"Rows a join buffers for a side after its latest batch.", []string{"join", "side"}, nil),
		joinStateBytes: prometheus.NewDesc("medallion_join_state_bytes",
			"Bytes of a side's join state after its latest batch.", []string{"join", "side"}, nil),
		joinSourceWatermark: prometheus.NewDesc("medallion_join_source_watermark_timestamp_seconds",
			"A join input source's watermark (its max event time seen minus its delay) after the join's latest batch.", []string{"join", "source"}, nil),
	}
	for _, c := range []prometheus.Collector{m.rowsIn, m.rowsOut, m.rejects, m.duplicates, m.filtered, m.lateQ, m.lateM, m.changeRows,
		m.joinIn, m.joinLate, m.joinUnmatched, m.joinMatched, m.joinMerged, m} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every series from the start, so that rate() and absence alerts see zeros, not gaps.
	cfg := env.Config
	for _, t := range append([]string{"landing"}, TablePaths(env)...) {
		m.rowsIn.WithLabelValues(t)
	}
	for _, src := range cfg.AllSources() {
		m.rowsOut.WithLabelValues(src.Tables.Bronze)
	}
	for _, g := range cfg.Gold {
		m.rowsOut.WithLabelValues(g.Quarantine)
		m.lateQ.WithLabelValues(g.Name)
		m.lateM.WithLabelValues(g.Name)
		m.changeRows.WithLabelValues(g.Table)
	}
	for _, j := range cfg.Joins {
		for _, side := range []string{"left", "right"} {
			m.joinIn.WithLabelValues(j.Name, side)
			m.joinLate.WithLabelValues(j.Name, side)
			m.joinUnmatched.WithLabelValues(j.Name, side)
		}
		m.joinMatched.WithLabelValues(j.Name)
		m.joinMerged.WithLabelValues(j.Name)
		m.rowsIn.WithLabelValues(j.Table)
		m.rowsIn.WithLabelValues(j.Quarantine)
		m.changeRows.WithLabelValues(j.Table)
	}
	m.rejects.WithLabelValues("stream", "validation")
	return m, nil
}

// observe counts what one successful run did, from its summary.
func (m *pipelineMetrics) observe(_ string, summary any) {
	cfg := m.env.Config
	view := func(name string) *config.Pipeline {
		if v, ok := cfg.ForSource(name); ok {
			return v
		}
		return cfg
	}
	switch s := summary.(type) {
	case bronze.Report:
		m.ingested(cfg, s)
	case MultiIngestReport:
		for _, r := range s.Sources {
			m.ingested(view(r.Source), r.Report)
		}
	case stream.Report:
		m.streamed(cfg, s)
	case StreamReport:
		for _, r := range s.Sources {
			m.streamed(view(r.Source), r.Report)
		}
		for _, j := range s.Joins {
			jc, ok := cfg.JoinByName(j.Name)
			if !ok {
				continue
			}
			addCount(m.rowsIn, jc.Table, j.OutputRows)
			addCount(m.rowsIn, jc.Quarantine, j.LateLeftRows+j.LateRightRows)
			m.joined(j)
			m.goldRows(j.Gold)
		}
	case late.MergeReport:
		m.merged(s.Gold)
	case MergeLateReport:
		for _, q := range s.Queries {
			m.merged(q.Gold)
		}
		for _, j := range s.Joins {
			if jc, ok := cfg.JoinByName(j.Name); ok {
				addCount(m.changeRows, jc.Table, j.ChangeRows)
			}
			if jc, ok := cfg.JoinByName(j.Name); ok && j.LateRows > 0 {
				m.joinMerged.WithLabelValues(j.Name).Add(float64(j.LateRows))
				m.rowsOut.WithLabelValues(jc.Quarantine).Add(float64(j.LateRows))
			}
		}
	case late.ReplayReport:
		m.replayed(s)
	case MultiReplayReport:
		for _, q := range s.Queries {
			m.replayed(q.ReplayReport)
		}
	}
}

func addCount(v *prometheus.CounterVec, label string, n int64) {
	if n > 0 {
		v.WithLabelValues(label).Add(float64(n))
	}
}

// ingested counts one source's ingest; cfg is that source's view.
func (m *pipelineMetrics) ingested(cfg *config.Pipeline, s bronze.Report) {
	addCount(m.rowsIn, "landing", s.Lines)
	addCount(m.rowsIn, cfg.Tables.Bronze, s.Rows)
	addCount(m.rowsIn, cfg.Tables.Rejects, s.Rejected)
	for reason, n := range s.RejectsBy {
		m.rejects.WithLabelValues("ingest", reason).Add(float64(n))
	}
}

// streamed counts one source query's run; cfg is that source's view.
func (m *pipelineMetrics) streamed(cfg *config.Pipeline, s stream.Report) {
	addCount(m.rowsOut, cfg.Tables.Bronze, s.InputRows)
	addCount(m.rowsIn, cfg.Tables.Silver, s.SilverRows)
	addCount(m.rowsIn, cfg.Tables.Rejects, s.Rejected)
	if s.Rejected > 0 {
		m.rejects.WithLabelValues("stream", "validation").Add(float64(s.Rejected))
	}
	m.duplicates.Add(float64(s.Duplicates))
	if s.FilteredDropped > 0 {
		m.filtered.WithLabelValues(cfg.Stream.Name).Add(float64(s.FilteredDropped))
	}
	m.goldRows(s.Gold)
}

// joined counts one join query's run by side.
func (m *pipelineMetrics) joined(j stream.JoinReport) {
	m.joinIn.WithLabelValues(j.Name, "left").Add(float64(j.LeftRows))
	m.joinIn.WithLabelValues(j.Name, "right").Add(float64(j.RightRows))
	m.joinLate.WithLabelValues(j.Name, "left").Add(float64(j.LateLeftRows))
	m.joinLate.WithLabelValues(j.Name, "right").Add(float64(j.LateRightRows))
	m.joinUnmatched.WithLabelValues(j.Name, "left").Add(float64(j.LeftUnmatchedRows))
	m.joinUnmatched.WithLabelValues(j.Name, "right").Add(float64(j.RightUnmatchedRows))
	m.joinMatched.WithLabelValues(j.Name).Add(float64(j.MatchedRows))
}

func (m *pipelineMetrics) goldRows(golds []stream.GoldReport) {
	for _, g := range golds {
		gc, ok := m.env.Config.GoldByName(g.Name)
		if !ok {
			continue
		}
		addCount(m.rowsIn, gc.Table, g.RowsOut)
		addCount(m.rowsIn, gc.Quarantine, g.LateRows)
		addCount(m.lateQ, g.Name, g.LateRows)
	}
}

func (m *pipelineMetrics) replayed(s late.ReplayReport) {
	var merges []late.MergeGoldReport
	for _, g := range s.Gold {
		merges = append(merges, g.Merge)
		if gc, ok := m.env.Config.GoldByName(g.Name); ok && g.Gold != nil {
			addCount(m.changeRows, gc.Table, g.Gold.ChangeRows)
		}
	}
	m.merged(merges)
}

func (m *pipelineMetrics) merged(golds []late.MergeGoldReport) {
	for _, g := range golds {
		gc, ok := m.env.Config.GoldByName(g.Name)
		if ok && g.Gold != nil {
			addCount(m.changeRows, gc.Table, g.Gold.ChangeRows)
		}
		if !ok || g.LateRows <= 0 {
			continue
		}
		m.lateM.WithLabelValues(g.Name).Add(float64(g.LateRows))
		m.rowsOut.WithLabelValues(gc.Quarantine).Add(float64(g.LateRows))
	}
}

// Describe is the lake figures' part of prometheus.Collector.
func (m *pipelineMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.watermark, m.watermarkDelay, m.watermarkAhead, m.lagP95, m.tableAge, m.tableVersion, m.stateRows, m.stateBytes,
		m.joinStateRows, m.joinStateBytes, m.joinSourceWatermark} {
		ch <- d
	}
}

// Collect reads the lake figures (the status page's report, at most metricsMaxAge old). A lake
// that cannot be read yields none of them: the job metrics say why.
func (m *pipelineMetrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := m.page.atMost(ctx, metricsMaxAge)
	if err != nil {
		m.env.Logger.Warn("metrics: lake figures unavailable", "err", err)
		return
	}
	now := m.env.clock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, t := range r.Tables {
		if !t.Exists {
			continue
		}
		gauge(m.tableVersion, float64(t.Version), t.Path)
		if !t.LastCommit.IsZero() {
			gauge(m.tableAge, now.Sub(t.LastCommit).Seconds(), t.Path)
		}
	}
	if r.Lag != nil && r.Lag.Rows > 0 {
		gauge(m.lagP95, r.Lag.P95.Seconds())
	}
	if n := len(r.Batches); n > 0 {
		last := r.Batches[n-1]
		if !last.Watermark.IsZero() && last.Watermark.Unix() > 0 {
			gauge(m.watermark, float64(last.Watermark.UnixMilli())/1000)
			gauge(m.watermarkDelay, now.Sub(last.Watermark).Seconds())
		}
		for i, label := range r.StateLabels(last.StateRows) {
			gauge(m.stateRows, float64(last.StateRows[i].Count), label)
			if i < len(last.StateBytes) {
				gauge(m.stateBytes, float64(last.StateBytes[i].Count), label)
			}
		}
	}
	// Each source's stream watermark against the clock: an event stamped in the future moves
	// it past now, and every on-time row after it is quarantined.
	for _, src := range append([]*report.Report{r}, r.Sources...) {
		if n := len(src.Batches); n > 0 {
			if wm := src.Batches[n-1].Watermark; !wm.IsZero() && wm.Unix() > 0 {
				gauge(m.watermarkAhead, max(wm.Sub(now).Seconds(), 0), cmp.Or(src.Name, m.env.Config.Stream.Name))
			}
		}
	}
	for _, j := range r.Joins {
		for side, v := range map[string]*int64{"left": j.StateLeft, "right": j.StateRight} {
			if v != nil {
				gauge(m.joinStateRows, float64(*v), j.Name, side)
			}
		}
		for side, v := range map[string]*int64{"left": j.StateBytesLeft, "right": j.StateBytesRight} {
			if v != nil {
				gauge(m.joinStateBytes, float64(*v), j.Name, side)
			}
		}
		for src, wm := range j.SourceWatermarks {
			if wm.Unix() > 0 { // the epoch is "no watermark yet"
				gauge(m.joinSourceWatermark, float64(wm.UnixMilli())/1000, j.Name, src)
			}
		}
	}
}
