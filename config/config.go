// Package config owns the pipeline configuration: one YAML file (DESIGN.md §8), decoded strictly,
// completed with defaults, validated, and overridden by flags and the environment.
//
// Guarantees: Parse and Load either return a Pipeline on which every later job can rely (every
// default filled in, every field checked) or an error that lists every problem found, each as a
// *FieldError naming the file, the line, the field path and what is expected. Secrets never come
// from the file: S3 credentials are read from the AWS_* environment only, and Redacted never
// prints them. The package reads files and the environment but writes nothing, so a crash leaves
// nothing behind. LoadContext and ParseContext stop promptly when their context ends (the
// expectations' parser checks it as it goes), with ctx's error rather than ErrInvalid.
package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"
)

// ErrInvalid is wrapped by every problem found in a config (each a *FieldError): the CLI answers
// it with exit code 2.
var ErrInvalid = errors.New("config: invalid pipeline config")

// FieldError is one problem in a config, located by file, line (0 when unknown, e.g. a value
// that came from a default or a flag) and field path ("gold[0].window.slide").
type FieldError struct {
	Source string
	Line   int
	Path   string
	Msg    string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Pipeline is a whole pipeline config. Zero values of optional fields are replaced by the
// defaults documented on each field when the file is parsed (or when ApplyDefaults is called).
type Pipeline struct {
	// Lake is where every table lives: "s3://bucket/prefix", "file:///abs/path" or a local path
	// (relative to the working directory). Default "lake".
	Lake string `yaml:"lake"`
	// S3 holds the S3 settings that are not secrets; the AWS_* environment fills the rest.
	S3 S3 `yaml:"s3"`
	// UnsafeCommits allows commits on a store that cannot put-if-absent (concurrent writers may
	// then lose commits). Default false.
	UnsafeCommits bool `yaml:"unsafe_commits"`
	// MemoryLimit is a soft limit on the process's memory (Go's runtime/debug.SetMemoryLimit):
	// as the heap nears it, the garbage collector runs more often instead of letting the heap
	// grow to twice the live data. The GOMEMLIMIT environment variable, when set, wins.
	// Default 0: the command sets 3/4 of the least of its cgroup's memory limit and the
	// machine's memory, and (GOGC unset) keeps the collector's headroom to a quarter of a
	// large live heap (docs/config.md).
	MemoryLimit ByteSize `yaml:"memory_limit"`
	// Landing is where raw event files arrive.
	Landing Landing `yaml:"landing"`
	// Schema is the event schema: the columns of bronze (plus its metadata columns) and silver.
	// Required, at least one column.
	Schema []Column `yaml:"schema"`
	// Tables are the bronze, rejects and silver table paths, relative to Lake.
	Tables Tables `yaml:"tables"`
	// SchemaEvolution says which changes of Schema besides new columns are applied to existing
	// tables (docs/schema-evolution.md). It is the default of every sources: entry too.
	SchemaEvolution SchemaEvolution `yaml:"schema_evolution"`
	// Stream is the streaming query from bronze to silver, quarantine and gold.
	Stream Stream `yaml:"stream"`
	// Expectations are data-quality constraints on the source's rows, checked in order in the
	// silver stage after the required columns and the event time. Optional.
	Expectations []Expectation `yaml:"expectations,omitempty"`
	// Transform computes columns and filters rows between validation and dedup, in Spark SQL
	// (docs/transforms.md). Optional.
	Transform Transform `yaml:"transform,omitempty"`
	// Sources are more sources besides the top-level one (named stream.name), each its own
	// landing -> bronze -> silver chain and streaming query (DESIGN.md §8). Optional.
	Sources []Source `yaml:"sources,omitempty"`
	// Joins are stream-stream joins of two sources, each its own query (spec/stream-joins.md).
	// Optional.
	Joins []Join `yaml:"joins,omitempty"`
	// Gold lists the aggregations computed by the stream. Required, at least one.
	Gold []Gold `yaml:"gold"`
	// Sinks publish tables' change feeds outside the lake (a Kafka topic per sink), exactly
	// once (config/sinks.go). Optional.
	Sinks []Sink `yaml:"sinks,omitempty"`
	// Jobs are the schedules of the recurring jobs run by serve.
	Jobs Jobs `yaml:"jobs"`
	// Serve is the long-running service (scheduler, metrics, health, notifications).
	Serve Serve `yaml:"serve"`
	// Log sets the log level and format.
	Log Log `yaml:"log"`
	// EventLog is the path of the event log table under the lake: one row per job run,
	// micro-batch, expectation result and table maintenance (docs/event-log.md). "off" turns
	// it off. Default "_medallion/event_log".
	EventLog string `yaml:"event_log,omitempty"`

	source string
	// joinPins are, in a ForSource view, the source's columns its joins use (the view has no
	// joins: PinnedColumns still names them).
	joinPins map[string]string
	root     *yaml.Node     // the document as written, for Override
	lines    map[string]int // field path -> line, for messages
	env      func(string) (string, bool)
}

// S3 holds S3 connection settings. Each empty field falls back to the AWS environment
// (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS_REGION, AWS_DEFAULT_REGION).
type S3 struct {
	// Endpoint is the S3 API URL, e.g. http://127.0.0.1:9000 for MinIO. Default: the
	// environment, else AWS's own endpoint.
	Endpoint string `yaml:"endpoint"`
	// Region is the signing region. Default: the environment, else us-east-1.
	Region string `yaml:"region"`
	// PathStyle addresses buckets as endpoint/bucket (MinIO, LocalStack). Default: true when an
	// endpoint is set, false for AWS.
	PathStyle *bool `yaml:"path_style,omitempty"`
	// RequestChecksum is when_required (default: S3-compatible stores reject the SDK's default
	// CRC headers) or when_supported.
	RequestChecksum string `yaml:"request_checksum"`
	// Credentials come only from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
	// AWS_SESSION_TOKEN); empty means the SDK's default chain (profiles, instance roles).
	Credentials Credentials `yaml:"-"`
}

// Credentials are S3 secrets. They print redacted.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// String never shows a secret.
func (c Credentials) String() string {
	if c.AccessKeyID == "" {
		return "(from the SDK's default chain)"
	}
	return fmt.Sprintf("access key %s, secret key %s, session token %s",
		redactID(c.AccessKeyID), setOrNot(c.SecretAccessKey), setOrNot(c.SessionToken))
}

// GoString keeps %#v from printing secrets too.
func (c Credentials) GoString() string { return "config.Credentials{" + c.String() + "}" }

func redactID(id string) string {
	if len(id) <= 4 {
		return "****"
	}
	return id[:4] + "****"
}

func setOrNot(s string) string {
	if s == "" {
		return "unset"
	}
	return "set (redacted)"
}

// Landing kinds.
const (
	LandingFiles = "files" // objects under a prefix of the lake
	LandingKafka = "kafka" // records of Kafka topics
)

// Landing describes where ingest reads raw events: a landing prefix (kind files) or Kafka topics.
type Landing struct {
	// Kind is files (default: objects under Path) or kafka (records of Kafka.Topic(s); Path,
	// MaxFilesPerTrigger, MaxDecompressedBytes and Notify are not used).
	Kind string `yaml:"kind"`
	// Kafka configures a kafka landing. Only with kind: kafka.
	Kafka *KafkaLanding `yaml:"kafka,omitempty"`
	// Path is the landing prefix under Lake. Default "landing/events/".
	Path string `yaml:"path"`
	// Format is json (one JSON object a line; ".gz" objects are gunzipped) or csv (with a
	// header line). Default json.
	Format string `yaml:"format"`
	// MaxFilesPerTrigger bounds the objects one ingest batch reads. Default 1000.
	MaxFilesPerTrigger int `yaml:"max_files_per_trigger"`
	// MaxLineBytes is the longest line kept as a record; longer lines are rejected. Default 1MiB.
	MaxLineBytes ByteSize `yaml:"max_line_bytes"`
	// MaxDecompressedBytes bounds what one gzip object may inflate to; the rest of a larger
	// object is rejected with reason decompressed_too_large. Default 1GiB.
	MaxDecompressedBytes ByteSize `yaml:"max_decompressed_bytes"`
	// Notify selects how new objects are discovered.
	Notify Notify `yaml:"notify"`
}

// KafkaLanding is a Kafka landing (DESIGN.md §8): the topics ingest reads, from explicit
// offsets kept in the ingest checkpoint (no consumer group). TLS and SASL come from the
// environment (KAFKA_TLS*, KAFKA_SASL_*; see docs/kafka.md), never from the file.
type KafkaLanding struct {
	// Brokers are the bootstrap brokers, host:port. Default: KAFKA_BROKERS (comma-separated).
	Brokers []string `yaml:"brokers,omitempty"`
	// Topic is the topic to read; Topics reads several into the same bronze table. One of them.
	Topic  string   `yaml:"topic,omitempty"`
	Topics []string `yaml:"topics,omitempty"`
	// StartingOffsets is where the first run starts: earliest (default) or latest. Partitions
	// added later start at their earliest offset.
	StartingOffsets string `yaml:"starting_offsets"`
	// MaxRecordsPerTrigger bounds the offsets one ingest batch reads. Default 1000000.
	MaxRecordsPerTrigger int64 `yaml:"max_records_per_trigger"`
	// FailOnDataLoss: offsets deleted by retention before ingest read them fail the run (true,
	// the default, as in Spark); false skips and counts them.
	FailOnDataLoss *bool `yaml:"fail_on_data_loss,omitempty"`
	// GroupID, when set, is a consumer group that ingest commits each batch's end offsets to, only
	// for monitoring with Kafka's own tools; the ingest checkpoint stays the position.
	GroupID string `yaml:"group_id,omitempty"`
}

// TopicList is Topic or Topics.
func (k *KafkaLanding) TopicList() []string {
	if k.Topic != "" {
		return append([]string{k.Topic}, k.Topics...)
	}
	return k.Topics
}

// FailsOnDataLoss is fail_on_data_loss with its default (true).
func (k *KafkaLanding) FailsOnDataLoss() bool { return k.FailOnDataLoss == nil || *k.FailOnDataLoss }

// Notify configures event-driven ingestion.
type Notify struct {
	// Mode is poll (default: list the prefix) or webhook (serve receives S3 event notifications,
	// with polling as reconciliation).
	Mode string `yaml:"mode"`
	// Path is the HTTP path on serve.listen that accepts webhook events. Default "/s3-events".
	Path string `yaml:"path"`
	// ARN is the MinIO notification target to subscribe the bucket to. Default
	// "arn:minio:sqs::PRIMARY:webhook".
	ARN string `yaml:"arn"`
	// Reconcile is how often a listing catches objects whose event was lost. Default 5m.
	Reconcile Duration `yaml:"reconcile"`
	// AllowUnauthenticated lets serve accept webhook events without a token on an address
	// other than loopback. Default false: serve refuses to start that way.
	AllowUnauthenticated bool `yaml:"allow_unauthenticated"`
	// Token is the bearer token every webhook request must carry, from the environment
	// (MEDALLION_WEBHOOK_TOKEN) only, never from the file.
	Token WebhookToken `yaml:"-"`
}

// WebhookToken is a secret; it prints redacted.
type WebhookToken string

// String never shows the token.
func (t WebhookToken) String() string { return setOrNot(string(t)) }

// GoString keeps %#v from printing the token.
func (t WebhookToken) GoString() string { return "config.WebhookToken(" + t.String() + ")" }

// Column is one declared event column.
type Column struct {
	// Name is the JSON field name and column name. Required; unique ignoring case.
	Name string `yaml:"name"`
	// Type is string, long, integer, short, byte, double, float, boolean, binary, date,
	// timestamp, timestamp_ntz or decimal(p,s). Required.
	Type ColumnType `yaml:"type"`
	// Required rows without this field (or with null) are rejected by silver. Default false.
	Required bool `yaml:"required"`
	// Format is a Spark datetime pattern a timestamp column's strings are in, such as
	// "dd/MM/yyyy HH:mm:ss" (docs/config.md lists the letters). Default: RFC 3339 and
	// 'YYYY-MM-DD HH:MM:SS'. Only on timestamp columns; exclusive with Unit.
	Format string `yaml:"format,omitempty"`
	// Unit reads a timestamp column as epoch numbers (JSON numbers or numeric strings): s, ms,
	// us or ns. Only on timestamp columns; exclusive with Format.
	Unit string `yaml:"unit,omitempty"`
}

// Expectation is a named data-quality constraint (DESIGN.md §4), as Databricks' declarative
// pipelines have them. The export to Spark carries each as a filter: Expect is Spark SQL.
type Expectation struct {
	// Name names the expectation in rejects (reason expectation:<name>), progress, metrics and
	// errors. Required; unique; letters, digits, _ and -.
	Name string `yaml:"name"`
	// Expect is a boolean Spark SQL expression over the source's columns, e.g.
	// "amount >= 0" or "country IN ('DE', 'FR')". A row passes when it is true; false or NULL
	// is a violation (write "x IS NULL OR x > 0" to let nulls pass). Required.
	Expect string `yaml:"expect"`
	// OnViolation is warn (keep the row, count it), drop (the row goes to rejects) or fail
	// (the batch commits nothing and the job fails). Default warn.
	OnViolation string `yaml:"on_violation"`
}

// Expectation actions.
const (
	OnViolationWarn = "warn"
	OnViolationDrop = "drop"
	OnViolationFail = "fail"
)

// Tables are the table paths of the pipeline, relative to the lake.
type Tables struct {
	// Bronze is the raw table. Default "bronze/events".
	Bronze string `yaml:"bronze"`
	// Rejects holds lines that are not records, and rows silver rejects. Default "bronze/rejects".
	Rejects string `yaml:"rejects"`
	// Silver holds every valid event once. Default "silver/events".
	Silver string `yaml:"silver"`
	// ChangeDataFeed creates Bronze, Rejects and Silver with delta.enableChangeDataFeed
	// (default false: the stream only appends to them, so their feed is their inserts, which
	// a Delta stream reads as well). It applies when a table is created; an existing table
	// keeps its property.
	ChangeDataFeed bool `yaml:"change_data_feed,omitempty"`
}

// Stream is the streaming query.
type Stream struct {
	// Name names the query. Default "events".
	Name string `yaml:"name"`
	// Checkpoint is the checkpoint prefix under Lake. Default "_checkpoints/" + Name.
	Checkpoint string `yaml:"checkpoint"`
	// EventTime is the schema column with the event time (timestamp or timestamp_ntz).
	// Default "event_time".
	EventTime string `yaml:"event_time"`
	// Watermark is the allowed lateness. Required when a gold aggregation uses append mode.
	Watermark Duration `yaml:"watermark"`
	// MaxFutureSkew: rows whose event time is later than their ingest time plus this are
	// rejected with reason "future". Default 1h.
	MaxFutureSkew Duration `yaml:"max_future_skew"`
	// IdleTimeout lets the watermark advance with the clock after the source has been silent
	// this long (Flink's idleness). Default 0: disabled.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// Dedup lists the columns of the dedup key; empty means no dedup. Default none.
	Dedup []string `yaml:"dedup,omitempty"`
	// Trigger is once, available-now or processing-time=<duration>. Default available-now.
	Trigger Trigger `yaml:"trigger"`
	// MaxFilesPerTrigger bounds the bronze files one micro-batch reads. Default 1000.
	MaxFilesPerTrigger int `yaml:"max_files_per_trigger"`
	// MaxBytesPerTrigger is a soft bound on the bronze bytes one micro-batch reads (Delta's
	// maxBytesPerTrigger): the batch ends with the file that reaches it. Default 0: no bound.
	MaxBytesPerTrigger ByteSize `yaml:"max_bytes_per_trigger"`
	// IgnoreDeletes skips bronze commits that only remove files instead of failing. Default false.
	IgnoreDeletes bool `yaml:"ignore_deletes"`
	// IgnoreChanges re-reads rewritten bronze files instead of failing. Default false.
	IgnoreChanges bool `yaml:"ignore_changes"`
	// LateAlertFraction logs a warning when a batch's late rows exceed this fraction of its
	// input rows (0..1). Default 0: no alert.
	LateAlertFraction float64 `yaml:"late_alert_fraction"`
	// State tunes the state store.
	State StateStore `yaml:"state"`
}

// StateStore tunes the state store kept next to the checkpoint (Spark's names and defaults).
type StateStore struct {
	// MinDeltasForSnapshot writes a full snapshot after this many delta versions. Default 10.
	MinDeltasForSnapshot int `yaml:"min_deltas_for_snapshot"`
	// MinBatchesToRetain keeps this many versions of state and checkpoint logs. Default 100.
	MinBatchesToRetain int `yaml:"min_batches_to_retain"`
	// DedupRetention keeps dedup keys in state this long past the watermark, so that a late
	// resend up to watermark + retention old is matched in memory; older ones are looked up in
	// silver. Longer: fewer silver reads, more memory (the keys of that much event time).
	// Default: the watermark.
	DedupRetention Duration `yaml:"dedup_retention"`
}

// Gold is one aggregation of the stream into a gold table.
type Gold struct {
	// Name identifies the aggregation (--gold NAME, metrics). Required, unique, letters,
	// digits, '_' and '-'.
	Name string `yaml:"name"`
	// Table is the gold table path. Default "gold/" + Name.
	Table string `yaml:"table"`
	// Quarantine is the table of this aggregation's late rows. Default "silver/late_" + Name.
	Quarantine string `yaml:"quarantine"`
	// Window is the event-time window. Required.
	Window Window `yaml:"window"`
	// GroupBy lists schema columns that key the aggregation besides the window. Default none
	// (required for session windows).
	GroupBy []string `yaml:"group_by,omitempty"`
	// Aggregates are the aggregate columns. Required, at least one.
	Aggregates []Aggregate `yaml:"aggregates"`
	// OutputMode is append (default), update or complete.
	OutputMode string `yaml:"output_mode"`
	// Source names the input: a source or a join. Default: the top-level stream (stream.name).
	// Read it through Pipeline.GoldSource, which applies the default.
	Source string `yaml:"source,omitempty"`
	// TimeColumn is the input column the windows are over. Default: the source's event time;
	// for a join, the left source's event-time column as the joined table names it. Read it
	// through Pipeline.GoldTimeColumn.
	TimeColumn string `yaml:"time_column,omitempty"`
	// ChangeDataFeed creates the gold table with delta.enableChangeDataFeed (default true):
	// merge-late and replay then write its change rows in each commit. It applies when the
	// table is created; an existing table keeps its property (docs/change-data-feed.md says
	// how to turn it on or off later). Read it through ChangeFeed.
	ChangeDataFeed *bool `yaml:"change_data_feed,omitempty"`
}

// ChangeFeed is change_data_feed with its default (true).
func (g *Gold) ChangeFeed() bool { return g.ChangeDataFeed == nil || *g.ChangeDataFeed }

// Window types.
const (
	WindowTumbling = "tumbling"
	WindowSliding  = "sliding"
	WindowSession  = "session"
)

// Output modes.
const (
	OutputAppend   = "append"
	OutputUpdate   = "update"
	OutputComplete = "complete"
)

// Window is Spark's window(col, size, slide, start_time) or session_window(col, gap).
type Window struct {
	// Type is tumbling, sliding or session. Required.
	Type string `yaml:"type"`
	// Size is the window length (tumbling, sliding). Required for them, > 0.
	Size Duration `yaml:"size,omitempty"`
	// Slide is the distance between window starts (sliding only; 0 < slide <= size).
	Slide Duration `yaml:"slide,omitempty"`
	// StartTime shifts window starts from the epoch (tumbling, sliding); |start_time| < slide.
	// Default 0.
	StartTime Duration `yaml:"start_time,omitempty"`
	// Gap closes a session after this much inactivity (session only). Required for it, > 0.
	Gap Duration `yaml:"gap,omitempty"`
}

// EffectiveSlide is Slide for sliding windows and Size for tumbling ones.
func (w Window) EffectiveSlide() Duration {
	if w.Type == WindowSliding {
		return w.Slide
	}
	return w.Size
}

// Aggregate functions.
const (
	FnCount               = "count"
	FnSum                 = "sum"
	FnMin                 = "min"
	FnMax                 = "max"
	FnAvg                 = "avg"
	FnApproxCountDistinct = "approx_count_distinct"
	FnApproxPercentile    = "approx_percentile"
)

// Aggregate is one aggregate column of a gold table.
type Aggregate struct {
	// Fn is count, sum, min, max, avg, approx_count_distinct or approx_percentile. Required.
	Fn string `yaml:"fn"`
	// Column is the input column; required except for count (count without a column counts
	// rows, with one counts non-null values).
	Column string `yaml:"column,omitempty"`
	// As names the output column. Default Fn, or Fn + "_" + Column when a column is given.
	As string `yaml:"as"`
	// Percentiles (approx_percentile only, required): each in [0, 1].
	Percentiles []float64 `yaml:"percentiles,omitempty"`
	// RelativeAccuracy of approx_percentile's sketch, in (0, 1). Default 0.01.
	RelativeAccuracy float64 `yaml:"relative_accuracy,omitempty"`
	// RSD is approx_count_distinct's maximum relative standard deviation, in [0.01, 0.39]
	// (Spark's rsd). Default 0.05.
	RSD float64 `yaml:"rsd,omitempty"`
}

// Jobs are the recurring jobs. An empty schedule means serve does not run that job (it can
// still be run with `medallion run`).
type Jobs struct {
	Ingest     Job         `yaml:"ingest"`
	Stream     Job         `yaml:"stream"`
	MergeLate  Job         `yaml:"merge_late"`
	Replay     ReplayJob   `yaml:"replay"`
	Optimize   OptimizeJob `yaml:"optimize"`
	Vacuum     VacuumJob   `yaml:"vacuum"`
	Checkpoint Job         `yaml:"checkpoint"`
	// Publish sends every sink's new changes. Without a schedule or after of its own, serve
	// runs it after each successful stream, merge_late and replay run when sinks are
	// configured.
	Publish Job `yaml:"publish"`
}

// Job is a schedule and a time limit.
type Job struct {
	// Schedule is a cron spec in UTC: 5 fields, or 6 with seconds first, or a descriptor such
	// as @hourly or "@every 1m" (see ParseSchedule). Default none.
	Schedule string `yaml:"schedule,omitempty"`
	// Timeout stops a run that takes longer, at a safe point. Default 0: no limit.
	Timeout Duration `yaml:"timeout,omitempty"`
	// After names another job (ingest, stream, merge_late, ...): serve runs this one right after
	// each successful run of that one, so a chain such as ingest -> stream adds no schedule
	// period of lag. With or without a schedule of its own. Default none.
	After string `yaml:"after,omitempty"`
}

// ReplayJob recomputes a recent range of gold.
type ReplayJob struct {
	Job `yaml:",inline"`
	// Lookback is the range replayed by a scheduled run, ending now. Default 24h.
	Lookback Duration `yaml:"lookback"`
	// Source is silver (default) or bronze (re-validated and deduplicated).
	Source string `yaml:"source"`
}

// OptimizeJob compacts small files.
type OptimizeJob struct {
	Job `yaml:",inline"`
	// TargetFileSize is the size compaction aims for. Default 128MiB.
	TargetFileSize ByteSize `yaml:"target_file_size"`
}

// VacuumJob deletes files no longer referenced by a table.
type VacuumJob struct {
	Job `yaml:",inline"`
	// Retain keeps unreferenced files younger than this. Default 168h (Delta's 7 days).
	Retain Duration `yaml:"retain"`
	// AllowShortRetention permits retain < 168h, which can break readers of old versions and
	// concurrent writers (Delta's retentionDurationCheck). Default false.
	AllowShortRetention bool `yaml:"allow_short_retention"`
}

// Serve configures `medallion serve`.
type Serve struct {
	// Listen is the host:port of /metrics, /healthz and webhook notifications.
	// Default "127.0.0.1:9464".
	Listen string `yaml:"listen"`
	// LeaseTTL is how long a job lease lives without renewal. Default 1m.
	LeaseTTL Duration `yaml:"lease_ttl"`
	// ShutdownTimeout bounds the wait for running jobs on SIGTERM. Default 30s.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
}

// Log configures log/slog.
type Log struct {
	// Level is debug, info (default), warn or error.
	Level string `yaml:"level"`
	// Format is auto (default: JSON unless stderr is a terminal), json or text.
	Format string `yaml:"format"`
}

// Load reads, parses and validates a config file, then applies the AWS_* environment.
func Load(path string) (*Pipeline, error) {
	return LoadContext(context.Background(), path)
}

// LoadContext is Load that stops when ctx ends (a signal during the load of a large config):
// its error then wraps ctx's (errors.Is(err, context.Canceled)) and not ErrInvalid, since the
// config was not found bad, only not read to the end. See ParseContext.
func LoadContext(ctx context.Context, path string) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	p, err := ParseContext(ctx, data, path)
	if err != nil {
		return nil, err
	}
	p.ApplyEnv(os.LookupEnv)
	return p, nil
}

// Parse decodes a config strictly, fills in defaults and validates it. source names the file
// in messages. The environment is not read (see ApplyEnv).
func Parse(data []byte, source string) (*Pipeline, error) {
	return ParseContext(context.Background(), data, source)
}

// ParseContext is Parse that stops when ctx ends, with an error wrapping ctx's. The costly
// part of a large config, its expectations (parsed and typed), checks ctx every few thousand
// tokens; the YAML decoding cannot be interrupted, so when ctx ends first it is left to
// finish in the background and its result is dropped.
func ParseContext(ctx context.Context, data []byte, source string) (*Pipeline, error) {
	if err := ctx.Err(); err != nil {
		return nil, loadStopped(source, err)
	}
	root, err := unmarshalContext(ctx, data)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, loadStopped(source, err)
		}
		return nil, syntaxError(source, err)
	}
	return decode(ctx, root, source)
}

// unmarshalContext is yaml.Unmarshal into a node tree, abandoned (not stopped: the library
// cannot be) when ctx ends first.
func unmarshalContext(ctx context.Context, data []byte) (*yaml.Node, error) {
	var root yaml.Node
	if ctx.Done() == nil {
		return &root, yaml.Unmarshal(data, &root)
	}
	done := make(chan error, 1) // buffered: an abandoned decoding does not block
	go func() { done <- yaml.Unmarshal(data, &root) }()
	select {
	case err := <-done:
		return &root, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// loadStopped is the error of a load that ctx stopped: not ErrInvalid.
func loadStopped(source string, err error) error {
	return fmt.Errorf("config: loading %s stopped before the end: %w", source, err)
}

func decode(ctx context.Context, root *yaml.Node, source string) (*Pipeline, error) {
	d := &decoder{source: source, lines: map[string]int{}, badLines: map[int]bool{}}
	p := d.decode(root)
	if p == nil {
		return nil, errors.Join(capErrors(source, d.errs)...)
	}
	p.source, p.root, p.lines = source, root, d.lines
	p.ApplyDefaults()
	errs := d.errs
	if err := p.validate(ctx); err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, loadStopped(source, err)
		}
		errs = append(errs, unjoin(err)...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(capErrors(source, errs)...)
	}
	return p, nil
}

// capErrors keeps the first maxErrors problems and counts the rest: a generated or mangled
// file can have thousands, and the first ones are the ones to fix.
func capErrors(source string, errs []error) []error {
	if len(errs) <= maxErrors {
		return errs
	}
	more := &FieldError{Source: source, Msg: fmt.Sprintf("%d more problems not shown", len(errs)-maxErrors)}
	return append(errs[:maxErrors:maxErrors], more)
}

// unjoin flattens errors.Join trees so that messages stay one per line.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// ApplyDefaults fills every unset optional field with its documented default.
func (p *Pipeline) ApplyDefaults() {
	setStr(&p.Lake, "lake")
	setStr(&p.S3.RequestChecksum, "when_required")
	defaultExpectations(p.Expectations)
	defaultTransform(&p.Transform)
	defaultLanding(&p.Landing, "landing/events/")
	defaultTables(&p.Tables, "bronze/events", "silver/events")
	setBool(&p.SchemaEvolution.TypeWidening, false)
	s := &p.Stream
	setStr(&s.Name, "events")
	if s.Trigger.Kind == "" && s.Trigger.err == nil {
		s.Trigger = Trigger{Kind: TriggerAvailableNow, text: string(TriggerAvailableNow)}
	}
	defaultStream(s, s.Trigger)
	p.defaultSources()
	p.defaultJoins()
	p.defaultSinks()
	for i := range p.Gold {
		g := &p.Gold[i]
		if g.Name != "" {
			setStr(&g.Table, "gold/"+g.Name)
			setStr(&g.Quarantine, "silver/late_"+g.Name)
		}
		setStr(&g.OutputMode, OutputAppend)
		for j := range g.Aggregates {
			a := &g.Aggregates[j]
			if a.As == "" && a.Fn != "" {
				a.As = a.Fn
				if a.Column != "" {
					a.As += "_" + a.Column
				}
			}
			if a.Fn == FnApproxPercentile && a.RelativeAccuracy == 0 {
				a.RelativeAccuracy = 0.01
			}
			if a.Fn == FnApproxCountDistinct && a.RSD == 0 {
				a.RSD = 0.05
			}
		}
	}
	setDur(&p.Jobs.Replay.Lookback, NewDuration(24*3600e9))
	setStr(&p.Jobs.Replay.Source, "silver")
	setSize(&p.Jobs.Optimize.TargetFileSize, 128<<20)
	setDur(&p.Jobs.Vacuum.Retain, NewDuration(168*3600e9))
	setStr(&p.Serve.Listen, "127.0.0.1:9464")
	setDur(&p.Serve.LeaseTTL, NewDuration(60e9))
	setDur(&p.Serve.ShutdownTimeout, NewDuration(30e9))
	setStr(&p.Log.Level, "info")
	setStr(&p.Log.Format, "auto")
	setStr(&p.EventLog, DefaultEventLog)
}

// DefaultEventLog is the event log's path under the lake when the config does not set one.
const DefaultEventLog = "_medallion/event_log"

// EventLogOff is the event_log value that turns the event log off.
const EventLogOff = "off"

// EventLogPath is the event log table's path under the lake, and false when the config turns
// it off.
func (p *Pipeline) EventLogPath() (string, bool) {
	if p.EventLog == EventLogOff {
		return "", false
	}
	if p.EventLog == "" {
		return DefaultEventLog, true
	}
	return p.EventLog, true
}

// SchemaEvolution is the schema_evolution block of a source: the changes of `schema:` that
// are applied to its existing tables besides added columns (which always are).
type SchemaEvolution struct {
	// TypeWidening widens an existing column in place when its declared type becomes a wider
	// one that Delta's typeWidening table feature allows (int to long, float to double, date to
	// timestamp_ntz, a larger decimal, ...): bronze, silver and the quarantines get the
	// feature and the new type in one metaData commit each. A table with that reader feature
	// can no longer be read by delta-rs 1.6 nor by Polars, so the default is false, and then
	// a widening is refused at job start like every other type change. Default false; a
	// sources: entry defaults to the top-level value.
	TypeWidening *bool `yaml:"type_widening"`
}

// Widening reports whether TypeWidening is on.
func (e SchemaEvolution) Widening() bool { return e.TypeWidening != nil && *e.TypeWidening }

func setBool(b **bool, v bool) {
	if *b == nil {
		*b = &v
	}
}

func setStr(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

func setInt(n *int, v int) {
	if *n == 0 {
		*n = v
	}
}

// setDur keeps a value written but invalid (even ""), so that Validate reports it.
func setDur(d *Duration, v Duration) {
	if !d.IsSet() && d.Err() == nil {
		*d = v
	}
}

func setSize(b *ByteSize, v int64) {
	if !b.IsSet() && b.Err() == nil {
		*b = NewByteSize(v)
	}
}

func defaultExpectations(es []Expectation) {
	for i := range es {
		setStr(&es[i].OnViolation, OnViolationWarn)
	}
}

// defaultLanding fills a source's landing; path is its default prefix.
func defaultLanding(l *Landing, path string) {
	setStr(&l.Kind, LandingFiles)
	if k := l.Kafka; k != nil {
		setStr(&k.StartingOffsets, "earliest")
		if k.MaxRecordsPerTrigger == 0 {
			k.MaxRecordsPerTrigger = 1_000_000
		}
	}
	setStr(&l.Path, path)
	setStr(&l.Format, "json")
	setInt(&l.MaxFilesPerTrigger, 1000)
	setSize(&l.MaxLineBytes, 1<<20)
	setSize(&l.MaxDecompressedBytes, 1<<30)
	setStr(&l.Notify.Mode, "poll")
	setStr(&l.Notify.Path, "/s3-events")
	setStr(&l.Notify.ARN, "arn:minio:sqs::PRIMARY:webhook")
	setDur(&l.Notify.Reconcile, NewDuration(5*60e9))
}

// defaultTables fills a source's tables; the rejects table is shared by default.
func defaultTables(t *Tables, bronze, silver string) {
	setStr(&t.Bronze, bronze)
	setStr(&t.Rejects, "bronze/rejects")
	setStr(&t.Silver, silver)
}

// defaultStream fills a source's query settings; s.Name must be set. trigger is the default
// trigger (the top-level stream's, for a source of sources:).
func defaultStream(s *Stream, trigger Trigger) {
	setStr(&s.Checkpoint, "_checkpoints/"+s.Name)
	setStr(&s.EventTime, "event_time")
	setDur(&s.MaxFutureSkew, NewDuration(3600e9))
	if s.Trigger.Kind == "" && s.Trigger.err == nil {
		s.Trigger = trigger
	}
	setInt(&s.MaxFilesPerTrigger, 1000)
	setInt(&s.State.MinDeltasForSnapshot, 10)
	setInt(&s.State.MinBatchesToRetain, 100)
	setDur(&s.State.DedupRetention, s.Watermark)
}

// Source is the file name the config was read from.
func (p *Pipeline) Source() string { return p.source }

// GoldByName finds a gold aggregation by name.
func (p *Pipeline) GoldByName(name string) (*Gold, bool) {
	for i := range p.Gold {
		if p.Gold[i].Name == name {
			return &p.Gold[i], true
		}
	}
	return nil, false
}

// Column finds a schema column by exact name.
func (p *Pipeline) Column(name string) (Column, bool) {
	for _, c := range p.Schema {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// UsePathStyle is the effective S3 addressing style.
func (s S3) UsePathStyle() bool {
	if s.PathStyle != nil {
		return *s.PathStyle
	}
	return s.Endpoint != ""
}

// ParseSchedule parses a job schedule the way the scheduler must: seconds optional, descriptors
// (@hourly, @every 1m) allowed. Schedules are meant in UTC: the parsed schedule follows the
// location of the time given to Next, so the scheduler runs cron with cron.WithLocation(time.UTC)
// (a "CRON_TZ=..." prefix in the spec still picks another zone).
func ParseSchedule(spec string) (sched cron.Schedule, err error) {
	// robfig/cron panics on some malformed specs (a time-zone prefix without a schedule, "TZ=");
	// a config error must name the field, never crash.
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule %q: %v", spec, r)
		}
	}()
	parser := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month |
		cron.Dow | cron.Descriptor)
	return parser.Parse(spec)
}
