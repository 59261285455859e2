package config

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/bronze/timefmt"
	"github.com/medallion-lake/medallion/objstore"
)

// bronzeColumns are the metadata columns bronze adds to the declared schema; kafkaColumns those
// it adds for a Kafka landing (reserved for every landing, so a config can switch kinds).
var (
	bronzeColumns = []string{"_rescued_data", "_ingest_time", "_source_file", "_source_offset"}
	kafkaColumns  = []string{"_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp", "_kafka_key"}
)

// kafkaTopicRE is Kafka's rule for topic names (legal characters, at most 249 of them).
var kafkaTopicRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

var goldNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// validator collects every problem with its path; the line comes from the decoded file.
type validator struct {
	ctx  context.Context // ends the costly checks (expectations) early; see Pipeline.validate
	p    *Pipeline
	errs []error
}

func (v *validator) fail(path, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Source: v.p.sourceName(), Line: v.p.lineOf(path), Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (p *Pipeline) sourceName() string {
	if p.source == "" {
		return "config"
	}
	return p.source
}

// lineOf finds the line of a path, or of its nearest ancestor written in the file.
func (p *Pipeline) lineOf(path string) int {
	for path != "" {
		if l, ok := p.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

// Validate checks the whole config and returns every problem (errors.Join of *FieldError), or
// nil. It does not fill defaults: call ApplyDefaults first on a config built in code.
func (p *Pipeline) Validate() error {
	return p.validate(context.Background())
}

// validate is Validate that returns ctx's error alone, and no problem, when ctx ends before
// the checks do: the expectations' parsing stops early, so the problems found are not all.
func (p *Pipeline) validate(ctx context.Context) error {
	v := &validator{ctx: ctx, p: p}
	v.lake()
	if err := p.MemoryLimit.Err(); err != nil {
		v.fail("memory_limit", "%v", err)
	} else if p.MemoryLimit.Bytes < 0 {
		v.fail("memory_limit", "%s is negative: expected a size such as 1GiB (0: no limit)", p.MemoryLimit)
	}
	v.s3()
	inputs := map[string]*goldInput{}
	for i, s := range p.AllSources() {
		pre := ""
		if i > 0 {
			pre = fmt.Sprintf("sources[%d].", i-1)
			v.sourceHeader(pre, s)
		}
		v.landing(pre, s.Landing)
		cols := v.schema(pre, s.Schema)
		v.tables(pre, s.Tables)
		v.transform(pre, s, cols)
		v.stream(pre, s, cols)
		v.expectations(pre, s)
		if _, dup := inputs[s.Name]; !dup && s.Name != "" {
			inputs[s.Name] = &goldInput{cols: cols, eventTime: s.Stream.EventTime, watermark: s.Stream.Watermark.IsSet()}
		}
	}
	v.sourceNames()
	v.joins(inputs)
	v.gold(inputs)
	v.sinks()
	v.paths()
	v.jobs()
	v.serve()
	v.enum("log.level", p.Log.Level, "debug", "info", "warn", "error")
	v.enum("log.format", p.Log.Format, "auto", "json", "text")
	switch strings.ToLower(p.EventLog) {
	case "", EventLogOff:
	case "false", "no", "none", "disabled", "0":
		v.fail("event_log", "%q: write event_log: off to turn the event log off, or a table path under the lake", p.EventLog)
	default:
		v.tablePath("event_log", p.EventLog)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(v.errs...)
}

func (v *validator) enum(path, value string, allowed ...string) bool {
	for _, a := range allowed {
		if value == a {
			return true
		}
	}
	v.fail(path, "invalid value %q: expected %s", value, orList(allowed))
	return false
}

func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// duration checks a duration field; min is the smallest allowed value.
func (v *validator) duration(path string, d Duration, required bool, min time.Duration, what string) bool {
	switch {
	case d.Err() != nil:
		v.fail(path, "%v", d.Err())
	case !d.IsSet() && required:
		v.fail(path, "required: expected %s", what)
	case d.IsSet() && d.Duration < min:
		v.fail(path, "%s is too small: expected %s", d, what)
	default:
		return true
	}
	return false
}

func (v *validator) lake() {
	lake := v.p.Lake
	u, err := url.Parse(lake)
	switch {
	case lake == "":
		v.fail("lake", "required: expected s3://bucket/prefix, file:///path or a local path")
	case strings.Contains(lake, "://") && err != nil:
		v.fail("lake", "invalid URL %q: %v", lake, err)
	case strings.Contains(lake, "://") && u.Scheme == "s3":
		if u.Host == "" {
			v.fail("lake", "%q has no bucket: expected s3://bucket/prefix", lake)
		}
		if u.User != nil {
			v.fail("lake", "credentials in the URL are not allowed: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
		}
	case strings.Contains(lake, "://") && u.Scheme == "file":
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			v.fail("lake", "%q: expected an absolute path after file://, e.g. file:///var/lake", lake)
		}
	case strings.Contains(lake, "://"):
		v.fail("lake", "unsupported scheme %q: expected s3://bucket/prefix, file:///path or a local path", u.Scheme)
	}
}

func (v *validator) s3() {
	s := v.p.S3
	if s.Endpoint != "" {
		u, err := url.Parse(s.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.fail("s3.endpoint", "invalid endpoint %q: expected an http:// or https:// URL, e.g. http://127.0.0.1:9000", s.Endpoint)
		} else if u.User != nil {
			v.fail("s3.endpoint", "credentials in the URL are not allowed: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
		}
	}
	v.enum("s3.request_checksum", s.RequestChecksum, "when_required", "when_supported")
}

func (v *validator) landing(pre string, l Landing) {
	pre += "landing."
	if v.enum(pre+"kind", l.Kind, LandingFiles, LandingKafka) {
		switch {
		case l.Kind == LandingKafka && l.Kafka == nil:
			v.fail(pre+"kafka", "required with kind: kafka: expected {brokers: [host:port], topic: NAME}")
		case l.Kind == LandingKafka:
			v.kafka(pre, l.Kafka, l.Notify.Mode)
		case l.Kafka != nil:
			v.fail(pre+"kafka", "only read with %skind: kafka (kind is %s)", pre, l.Kind)
		}
	}
	if err := objstore.ValidatePrefix(l.Path); err != nil || strings.HasPrefix(l.Path, "/") {
		v.fail(pre+"path", "invalid prefix %q: expected a relative prefix under the lake, e.g. landing/events/", l.Path)
	}
	v.enum(pre+"format", l.Format, "json", "csv")
	if l.MaxFilesPerTrigger < 0 {
		v.fail(pre+"max_files_per_trigger", "%d is negative: expected a positive number of files", l.MaxFilesPerTrigger)
	}
	if err := l.MaxLineBytes.Err(); err != nil {
		v.fail(pre+"max_line_bytes", "%v", err)
	} else if l.MaxLineBytes.Bytes <= 0 {
		v.fail(pre+"max_line_bytes", "%s: expected a positive size, e.g. 1MiB", l.MaxLineBytes)
	}
	if err := l.MaxDecompressedBytes.Err(); err != nil {
		v.fail(pre+"max_decompressed_bytes", "%v", err)
	} else if l.MaxDecompressedBytes.Bytes <= 0 {
		v.fail(pre+"max_decompressed_bytes", "%s: expected a positive size, e.g. 1GiB", l.MaxDecompressedBytes)
	}
	n := l.Notify
	v.enum(pre+"notify.mode", n.Mode, "poll", "webhook")
	if !strings.HasPrefix(n.Path, "/") {
		v.fail(pre+"notify.path", "%q: expected an HTTP path starting with /", n.Path)
	}
	v.duration(pre+"notify.reconcile", n.Reconcile, true, time.Second, "a duration of at least 1s")
}

// kafka checks a Kafka landing.
func (v *validator) kafka(pre string, k *KafkaLanding, notifyMode string) {
	path := pre + "kafka"
	for i, b := range k.Brokers {
		if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
			v.fail(fmt.Sprintf("%s.brokers[%d]", path, i), "invalid broker %q: expected host:port, e.g. 127.0.0.1:9092", b)
		}
	}
	switch {
	case k.Topic == "" && len(k.Topics) == 0:
		v.fail(path+".topic", "required: expected a topic name (or topics: a list)")
	case k.Topic != "" && len(k.Topics) > 0:
		v.fail(path+".topics", "give topic or topics, not both")
	}
	seen := map[string]bool{}
	for i, t := range k.TopicList() {
		p := path + ".topic"
		if k.Topic == "" {
			p = fmt.Sprintf("%s.topics[%d]", path, i)
		}
		if !kafkaTopicRE.MatchString(t) || t == "." || t == ".." {
			v.fail(p, "invalid topic %q: expected 1 to 249 of A-Z a-z 0-9 . _ -", t)
		} else if seen[t] {
			v.fail(p, "topic %q is listed twice", t)
		}
		seen[t] = true
	}
	v.enum(path+".starting_offsets", k.StartingOffsets, "earliest", "latest")
	if k.MaxRecordsPerTrigger <= 0 {
		v.fail(path+".max_records_per_trigger", "%d: expected a positive number of records", k.MaxRecordsPerTrigger)
	}
	if k.GroupID != "" && (strings.TrimSpace(k.GroupID) != k.GroupID || strings.ContainsAny(k.GroupID, "\x00\n")) {
		v.fail(path+".group_id", "invalid group %q: no surrounding spaces or control characters", k.GroupID)
	}
	if notifyMode != "" && notifyMode != "poll" {
		v.fail(pre+"notify.mode", "%s is for S3 landing prefixes; a kafka landing reads its topics (use poll, the default)", notifyMode)
	}
}

// schema checks the columns and returns them by name.
func (v *validator) schema(pre string, schema []Column) *colSet {
	cols := &colSet{byName: map[string]Column{}, list: schema, what: pre + "schema"}
	if len(schema) == 0 {
		v.fail(pre+"schema", "required: expected a list of columns, e.g. - {name: event_id, type: string}")
	}
	lower := map[string]string{}
	for i, c := range schema {
		path := fmt.Sprintf("%sschema[%d]", pre, i)
		switch {
		case c.Name == "":
			v.fail(path+".name", "required: expected a column name")
		case strings.TrimSpace(c.Name) != c.Name || strings.ContainsAny(c.Name, ".`\x00\n"):
			v.fail(path+".name", "invalid column name %q: no surrounding spaces, dots, backticks or control characters", c.Name)
		case isBronzeColumn(c.Name):
			v.fail(path+".name", "%q is reserved for bronze metadata (%s)", c.Name, strings.Join(append(append([]string{}, bronzeColumns...), kafkaColumns...), ", "))
		default:
			if prev, dup := lower[strings.ToLower(c.Name)]; dup {
				v.fail(path+".name", "duplicate column %q (already declared as %q; names are case-insensitive, as in Spark)", c.Name, prev)
			} else {
				lower[strings.ToLower(c.Name)] = c.Name
				cols.byName[c.Name] = c
			}
		}
		switch {
		case c.Type.Err() != nil:
			v.fail(path+".type", "%v", c.Type.Err())
		case c.Type.Kind == "":
			v.fail(path+".type", "required: expected one of string, long, integer, short, byte, double, float, boolean, binary, date, timestamp, timestamp_ntz, decimal(p,s)")
		}
		v.timeFormat(path, c)
	}
	return cols
}

// timeFormat checks a column's format and unit: only on timestamp columns, not both, and a
// pattern the parser compiles (an unsupported letter is named).
func (v *validator) timeFormat(path string, c Column) {
	if c.Format == "" && c.Unit == "" {
		return
	}
	key := path + ".format"
	if c.Format == "" {
		key = path + ".unit"
	}
	switch {
	case c.Type.Err() == nil && c.Type.Kind != "" && !c.Type.IsTimestamp():
		v.fail(key, "column %q has type %s: format and unit are only for timestamp columns", c.Name, c.Type)
	case c.Format != "" && c.Unit != "":
		v.fail(key, "column %q: format and unit are exclusive (a pattern reads strings, a unit reads epoch numbers)", c.Name)
	default:
		if _, err := timefmt.New(c.Format, c.Unit); err != nil {
			v.fail(key, "column %q: %v", c.Name, err)
		}
	}
}

func isBronzeColumn(name string) bool {
	for _, b := range append(append([]string{}, bronzeColumns...), kafkaColumns...) {
		if strings.EqualFold(name, b) {
			return true
		}
	}
	return false
}

func (v *validator) tables(pre string, t Tables) {
	v.tablePath(pre+"tables.bronze", t.Bronze)
	v.tablePath(pre+"tables.rejects", t.Rejects)
	v.tablePath(pre+"tables.silver", t.Silver)
}

func (v *validator) tablePath(path, value string) {
	if value == "" {
		v.fail(path, "required: expected a table path under the lake, e.g. gold/events_5m")
		return
	}
	if err := objstore.ValidateKey(strings.TrimSuffix(value, "/")); err != nil || strings.Contains(value, "://") {
		v.fail(path, "invalid table path %q: expected a relative path under the lake (no leading /, no empty, . or .. segments)", value)
		return
	}
	// delta-rs takes %XX in a table's path for an escaped character, even in a plain path, and
	// then looks for the log somewhere else: such a table is written fine and Spark reads it,
	// but delta-rs (and what is built on it: Polars, DuckDB's delta extension) cannot open it.
	if strings.Contains(value, "%") {
		v.fail(path, "invalid table path %q: '%%' is not allowed in a path under the lake (delta-rs reads %%XX as an escaped character and cannot open the table); use another character, such as _ or -", value)
	}
}

// colSet is the columns an input offers: a source's schema, or a join's joined columns.
type colSet struct {
	byName map[string]Column // the valid ones
	list   []Column          // all, in order, for messages
	what   string            // "schema", "sources[0].schema", "the columns of join x"
}

// column checks that name is a column of cols.
func (v *validator) column(path, name string, cols *colSet) (Column, bool) {
	if name == "" {
		v.fail(path, "required: expected a column name from %s", cols.what)
		return Column{}, false
	}
	c, ok := cols.byName[name]
	if !ok {
		names := make([]string, 0, len(cols.list))
		for _, c := range cols.list {
			names = append(names, c.Name)
		}
		hint := ""
		for _, c := range cols.list {
			if strings.EqualFold(c.Name, name) {
				hint = fmt.Sprintf(" (did you mean %q? names are matched exactly)", c.Name)
			}
		}
		v.fail(path, "column %q is not in %s%s (columns: %s)", name, cols.what, hint, strings.Join(names, ", "))
	}
	return c, ok
}

func (v *validator) columnList(path string, names []string, cols *colSet) {
	seen := map[string]bool{}
	for i, n := range names {
		p := fmt.Sprintf("%s[%d]", path, i)
		if seen[n] {
			v.fail(p, "column %q is listed twice", n)
			continue
		}
		seen[n] = true
		v.column(p, n, cols)
	}
}

func (v *validator) stream(pre string, src Source, cols *colSet) {
	s := src.Stream
	pre += "stream."
	if pre == "stream." && (s.Name == "" || !goldNameRE.MatchString(s.Name)) {
		v.fail(pre+"name", "invalid name %q: expected letters, digits, '_' and '-'", s.Name)
	}
	v.tablePath(pre+"checkpoint", s.Checkpoint)
	if c, ok := v.column(pre+"event_time", s.EventTime, cols); ok && c.Type.Err() == nil && !c.Type.IsTimestamp() {
		v.fail(pre+"event_time", "column %q has type %s: expected timestamp or timestamp_ntz", c.Name, c.Type)
	}
	if s.Watermark.IsSet() || s.Watermark.Err() != nil {
		v.duration(pre+"watermark", s.Watermark, false, 0, "a non-negative duration such as 10m")
	} else {
		for i, g := range v.p.Gold {
			if g.OutputMode == OutputAppend && v.p.GoldSource(g) == src.Name {
				v.fail(pre+"watermark", "required by gold[%d] (%s) in append mode: Append output mode not supported when there are streaming aggregations on streaming DataFrames/DataSets without watermark", i, g.Name)
				break
			}
		}
	}
	v.duration(pre+"max_future_skew", s.MaxFutureSkew, true, 0, "a non-negative duration such as 1h")
	v.duration(pre+"idle_timeout", s.IdleTimeout, false, 0, "a non-negative duration (0 disables idleness)")
	v.columnList(pre+"dedup", s.Dedup, cols)
	if err := s.Trigger.Err(); err != nil {
		v.fail(pre+"trigger", "%v", err)
	}
	if s.MaxFilesPerTrigger < 0 {
		v.fail(pre+"max_files_per_trigger", "%d is negative: expected a positive number of files", s.MaxFilesPerTrigger)
	}
	if err := s.MaxBytesPerTrigger.Err(); err != nil {
		v.fail(pre+"max_bytes_per_trigger", "%v", err)
	} else if s.MaxBytesPerTrigger.Bytes < 0 {
		v.fail(pre+"max_bytes_per_trigger", "%s is negative: expected a size such as 256MB (0: no bound)", s.MaxBytesPerTrigger)
	}
	if s.LateAlertFraction < 0 || s.LateAlertFraction > 1 || math.IsNaN(s.LateAlertFraction) {
		v.fail(pre+"late_alert_fraction", "%v: expected a fraction between 0 and 1", s.LateAlertFraction)
	}
	if s.State.MinDeltasForSnapshot < 0 {
		v.fail(pre+"state.min_deltas_for_snapshot", "%d is negative: expected a positive number", s.State.MinDeltasForSnapshot)
	}
	if s.State.DedupRetention.Duration < 0 {
		v.fail(pre+"state.dedup_retention", "%s is negative: expected a duration such as 10m", s.State.DedupRetention)
	}
	if s.State.MinBatchesToRetain < 0 {
		v.fail(pre+"state.min_batches_to_retain", "%d is negative: expected a positive number", s.State.MinBatchesToRetain)
	}
}

// name checks the name of a source, join or gold aggregation (they are picked by name):
// required (example suggests one), letters, digits, '_' and '-'. It reports a valid name.
func (v *validator) name(path, name, example string) bool {
	switch {
	case name == "":
		v.fail(path, "required: expected %s", example)
	case !goldNameRE.MatchString(name):
		v.fail(path, "invalid name %q: expected letters, digits, '_' and '-'", name)
	default:
		return true
	}
	return false
}

// uniqueName checks the name of entry i of a list (gold, sinks): well formed, and not the
// name of an earlier entry (seen: name -> index).
func (v *validator) uniqueName(list, kind string, i int, name, example string, seen map[string]int) {
	path := fmt.Sprintf("%s[%d].name", list, i)
	if !v.name(path, name, example) {
		return
	}
	if j, dup := seen[name]; dup {
		v.fail(path, "duplicate %s name %q (also %s[%d])", kind, name, list, j)
	} else {
		seen[name] = i
	}
}

func (v *validator) gold(inputs map[string]*goldInput) {
	if len(v.p.Gold) == 0 {
		v.fail("gold", "required: expected at least one aggregation, e.g. - {name: events_5m, window: {type: tumbling, size: 5m}, aggregates: [{fn: count}]}")
	}
	names := map[string]int{}
	for i, g := range v.p.Gold {
		path := fmt.Sprintf("gold[%d]", i)
		v.uniqueName("gold", "gold", i, g.Name, "a name such as events_5m", names)
		if g.Name != "" {
			v.tablePath(path+".table", g.Table)
			v.tablePath(path+".quarantine", g.Quarantine)
		}
		v.window(path+".window", g.Window)
		if up, ok := v.p.UpstreamGold(g); ok {
			v.derivedGold(path, g, up)
			continue
		}
		in := v.goldInput(path, g, inputs)
		if in == nil {
			continue
		}
		cols := in.cols
		v.columnList(path+".group_by", g.GroupBy, cols)
		if v.enum(path+".output_mode", g.OutputMode, OutputAppend, OutputUpdate, OutputComplete) &&
			g.OutputMode == OutputUpdate && g.Window.Type == WindowSession {
			v.fail(path+".output_mode", "Update output mode not supported for session window on streaming DataFrames/DataSets")
		}
		if g.Window.Type == WindowSession && len(g.GroupBy) == 0 {
			v.fail(path+".group_by", "Global aggregation with session window in streaming query is not supported. (add at least one group_by column)")
		}
		v.aggregates(path, g, cols)
	}
}

func (v *validator) window(path string, w Window) {
	if !v.enum(path+".type", w.Type, WindowTumbling, WindowSliding, WindowSession) {
		return
	}
	extra := func(key string, d Duration, why string) {
		if d.IsSet() || d.Err() != nil {
			v.fail(path+"."+key, "not allowed for a %s window: %s", w.Type, why)
		}
	}
	switch w.Type {
	case WindowSession:
		v.duration(path+".gap", w.Gap, true, 1, "a positive duration such as 5m")
		extra("size", w.Size, "a session's length follows its events; set gap")
		extra("slide", w.Slide, "sessions do not slide")
		extra("start_time", w.StartTime, "sessions start at their first event")
		return
	case WindowTumbling:
		extra("slide", w.Slide, "use type: sliding for overlapping windows")
	case WindowSliding:
		v.duration(path+".slide", w.Slide, true, 1, "a positive duration no larger than size")
	}
	extra("gap", w.Gap, "gap is for session windows")
	sizeOK := v.duration(path+".size", w.Size, true, 1, "a positive duration such as 5m")
	startOK := v.duration(path+".start_time", w.StartTime, false, math.MinInt64, "a duration")
	slide := w.EffectiveSlide()
	if !sizeOK || slide.Err() != nil || slide.Duration <= 0 {
		return
	}
	if w.Type == WindowSliding && slide.Duration > w.Size.Duration {
		v.fail(path+".slide", "slide %s is larger than size %s: expected slide <= size", slide, w.Size)
	}
	if startOK {
		if st := w.StartTime.Duration; st >= slide.Duration || -st >= slide.Duration {
			v.fail(path+".start_time", "|start_time| = %s is not smaller than the slide %s: expected -%s < start_time < %s",
				FormatDuration(max(st, -st)), slide, slide, slide)
		}
	}
}

func (v *validator) aggregates(path string, g Gold, cols *colSet) {
	if len(g.Aggregates) == 0 {
		v.fail(path+".aggregates", "required: expected at least one aggregate, e.g. - {fn: count, as: count}")
	}
	outNames := map[string]string{"window": "the window column"}
	for i, k := range g.GroupBy {
		outNames[strings.ToLower(k)] = fmt.Sprintf("group_by[%d]", i)
	}
	for i, a := range g.Aggregates {
		ap := fmt.Sprintf("%s.aggregates[%d]", path, i)
		var col Column
		hasCol := false
		if a.Column != "" {
			col, hasCol = v.column(ap+".column", a.Column, cols)
		}
		switch a.Fn {
		case FnCount:
		case FnSum, FnAvg:
			if a.Column == "" {
				v.fail(ap+".column", "required: %s needs a numeric column", a.Fn)
			} else if hasCol && col.Type.Err() == nil && !col.Type.Numeric() {
				v.fail(ap+".column", "%s needs a numeric column; %q has type %s", a.Fn, a.Column, col.Type)
			}
		case FnMin, FnMax, FnApproxCountDistinct:
			if a.Column == "" {
				v.fail(ap+".column", "required: %s needs a column", a.Fn)
			}
		case FnApproxPercentile:
			if a.Column == "" {
				v.fail(ap+".column", "required: approx_percentile needs a numeric, date or timestamp column")
			} else if hasCol && col.Type.Err() == nil && !col.Type.Numeric() && !col.Type.IsTimestamp() && col.Type.Kind != KindDate {
				v.fail(ap+".column", "approx_percentile needs a numeric, date or timestamp column; %q has type %s", a.Column, col.Type)
			}
			if len(a.Percentiles) == 0 {
				v.fail(ap+".percentiles", "required: expected a list of fractions, e.g. [0.5, 0.95, 0.99]")
			}
			for j, q := range a.Percentiles {
				if q < 0 || q > 1 || math.IsNaN(q) {
					v.fail(fmt.Sprintf("%s.percentiles[%d]", ap, j), "%v: expected a fraction between 0 and 1", q)
				}
			}
			if a.RelativeAccuracy <= 0 || a.RelativeAccuracy >= 1 {
				v.fail(ap+".relative_accuracy", "%v: expected a fraction between 0 and 1 (exclusive)", a.RelativeAccuracy)
			}
		case "count_distinct", "countDistinct", "count(distinct)":
			v.fail(ap+".fn", "Distinct aggregations are not supported on streaming DataFrames/Datasets. Consider using approx_count_distinct() instead.")
		case "":
			v.fail(ap+".fn", "required: expected count, sum, min, max, avg, approx_count_distinct or approx_percentile")
		default:
			v.fail(ap+".fn", "unknown aggregate function %q: expected count, sum, min, max, avg, approx_count_distinct or approx_percentile", a.Fn)
		}
		if a.Fn != FnApproxPercentile {
			if len(a.Percentiles) > 0 {
				v.fail(ap+".percentiles", "only approx_percentile takes percentiles")
			}
			if a.RelativeAccuracy != 0 {
				v.fail(ap+".relative_accuracy", "only approx_percentile takes relative_accuracy")
			}
		}
		if a.Fn == FnApproxCountDistinct {
			if a.RSD < 0.01 || a.RSD > 0.39 {
				v.fail(ap+".rsd", "%v: expected a relative standard deviation between 0.01 and 0.39", a.RSD)
			}
		} else if a.RSD != 0 {
			v.fail(ap+".rsd", "only approx_count_distinct takes rsd")
		}
		if a.As == "" {
			continue
		}
		if prev, dup := outNames[strings.ToLower(a.As)]; dup {
			v.fail(ap+".as", "output column %q collides with %s", a.As, prev)
		} else {
			outNames[strings.ToLower(a.As)] = fmt.Sprintf("aggregates[%d]", i)
		}
		if a.Fn == FnSum || a.Fn == FnAvg {
			// A float sum or avg keeps its exact sum in gold's internal column _<as>_exact
			// (docs/exact-sums.md); reserved for every sum and avg, whatever the column type.
			exact := "_" + a.As + "_exact"
			if prev, dup := outNames[strings.ToLower(exact)]; dup {
				v.fail(ap+".as", "gold keeps this aggregate's exact sum in the internal column %q, which collides with %s: rename one of them", exact, prev)
			} else {
				outNames[strings.ToLower(exact)] = fmt.Sprintf("the internal exact-sum column of aggregates[%d]", i)
			}
		}
	}
}

// paths checks that no two tables, the checkpoint and the landing prefix overlap: one table
// inside another would be read as its data. Each path is compared with its own ancestors
// only, so a config with thousands of tables stays linear.
func (v *validator) paths() {
	owner := map[string]string{} // path -> the first field that declared it
	var order []struct{ field, path string }
	add := func(field, path string, _ bool) {
		if path = strings.Trim(path, "/"); path == "" {
			return
		}
		if first, dup := owner[path]; dup {
			if strings.HasSuffix(field, "tables.rejects") && strings.HasSuffix(first, "tables.rejects") {
				return // sources may share one rejects table: its rows name their source file
			}
			v.fail(field, "path %q is also %s: every table needs its own path", path, first)
			return
		}
		owner[path] = field
		order = append(order, struct{ field, path string }{field, path})
	}
	v.p.declaredPaths(add)
	for _, e := range order {
		for i := strings.LastIndexByte(e.path, '/'); i > 0; i = strings.LastIndexByte(e.path[:i], '/') {
			if outer, ok := owner[e.path[:i]]; ok {
				v.fail(e.field, "path %q is inside %s (%q): tables must not nest", e.path, outer, e.path[:i])
				break
			}
		}
	}
}

// jobNames are the config keys of the jobs.
func jobNames() []string {
	return []string{"ingest", "stream", "merge_late", "replay", "optimize", "vacuum", "checkpoint", "publish"}
}

// JobAfter maps each job (config key) to the job it runs after, for the jobs that have one.
func (j *Jobs) JobAfter() map[string]string {
	out := map[string]string{}
	for name, job := range map[string]Job{"ingest": j.Ingest, "stream": j.Stream, "merge_late": j.MergeLate,
		"replay": j.Replay.Job, "optimize": j.Optimize.Job, "vacuum": j.Vacuum.Job, "checkpoint": j.Checkpoint, "publish": j.Publish} {
		if job.After != "" {
			out[name] = job.After
		}
	}
	return out
}

// jobChains checks jobs.*.after: a known job, not itself, no cycle.
func (v *validator) jobChains() {
	after := v.p.Jobs.JobAfter()
	for _, name := range jobNames() {
		prev, ok := after[name]
		if !ok {
			continue
		}
		path := "jobs." + name + ".after"
		if !v.enum(path, prev, jobNames()...) {
			continue
		}
		seen := map[string]bool{name: true}
		for cur := prev; cur != ""; cur = after[cur] {
			if seen[cur] {
				v.fail(path, "%s runs after %s, which leads back to %s: a chain must not loop", name, prev, cur)
				break
			}
			seen[cur] = true
		}
	}
}

func (v *validator) jobs() {
	j := v.p.Jobs
	for _, e := range []struct {
		name string
		job  Job
	}{
		{"ingest", j.Ingest}, {"stream", j.Stream}, {"merge_late", j.MergeLate}, {"replay", j.Replay.Job},
		{"optimize", j.Optimize.Job}, {"vacuum", j.Vacuum.Job}, {"checkpoint", j.Checkpoint}, {"publish", j.Publish},
	} {
		path := "jobs." + e.name
		if e.job.Schedule != "" {
			if _, err := ParseSchedule(e.job.Schedule); err != nil {
				v.fail(path+".schedule", "invalid schedule %q: %v: expected a cron spec (\"0 * * * *\", seconds optional) or a descriptor (@hourly, \"@every 1m\")", e.job.Schedule, err)
			}
		}
		v.duration(path+".timeout", e.job.Timeout, false, 0, "a non-negative duration (0: no limit)")
	}
	v.jobChains()
	v.duration("jobs.replay.lookback", j.Replay.Lookback, true, 1, "a positive duration such as 24h")
	v.enum("jobs.replay.source", j.Replay.Source, "silver", "bronze")
	if err := j.Optimize.TargetFileSize.Err(); err != nil {
		v.fail("jobs.optimize.target_file_size", "%v", err)
	} else if j.Optimize.TargetFileSize.Bytes <= 0 {
		v.fail("jobs.optimize.target_file_size", "%s: expected a positive size, e.g. 128MiB", j.Optimize.TargetFileSize)
	}
	if v.duration("jobs.vacuum.retain", j.Vacuum.Retain, true, 0, "a non-negative duration such as 168h") &&
		j.Vacuum.Retain.Duration < 168*time.Hour && !j.Vacuum.AllowShortRetention {
		v.fail("jobs.vacuum.retain", "%s is shorter than 168h: readers of old versions and concurrent writers may fail; set allow_short_retention: true if you are sure", j.Vacuum.Retain)
	}
}

func (v *validator) serve() {
	s := v.p.Serve
	host, port, err := net.SplitHostPort(s.Listen)
	if err != nil {
		v.fail("serve.listen", "invalid address %q: expected host:port, e.g. 127.0.0.1:9464", s.Listen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.fail("serve.listen", "invalid port %q in %q: expected 0..65535", port, s.Listen)
	} else if strings.ContainsAny(host, " /") {
		v.fail("serve.listen", "invalid host %q in %q", host, s.Listen)
	}
	v.duration("serve.lease_ttl", s.LeaseTTL, true, time.Second, "a duration of at least 1s")
	v.duration("serve.shutdown_timeout", s.ShutdownTimeout, true, 0, "a non-negative duration")
}

// FieldError is a problem at path, located at its line in the file, for checks made above this
// package (Spark's join rules, checked with the join operator by jobs/specs.Check).
func (p *Pipeline) FieldError(path, format string, args ...any) *FieldError {
	return &FieldError{Source: p.sourceName(), Line: p.lineOf(path), Path: path, Msg: fmt.Sprintf(format, args...)}
}
