package jobs

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/kafka"
	"github.com/medallion-lake/medallion/report"
)

// KafkaCheckpoint is where a Kafka landing keeps its ingest batches: its own prefix beside the
// file ingest's, so that switching a pipeline's landing kind never mixes the two.
func KafkaCheckpoint(cfg *config.Pipeline) string {
	return path.Join(IngestCheckpoint(cfg), "kafka")
}

// KafkaSource is what a Kafka ingester needs from the config. The single-source form fills it
// from the top level; a `sources:` entry with landing.kind kafka fills it the same way from its
// own landing, schema, tables and checkpoint.
type KafkaSource struct {
	Landing        config.Landing
	Schema         []config.Column
	BronzePath     string
	RejectsPath    string
	CheckpointPath string
	// TableProps are the table properties bronze and rejects are created with
	// (spec.Tables.TableProps).
	TableProps map[string]string
	// Policy is what a changed Schema may do to the existing bronze table (SchemaPolicy).
	Policy bronze.SchemaPolicy
}

// topLevelKafkaSource is the single-source form's Kafka source.
func topLevelKafkaSource(cfg *config.Pipeline) KafkaSource {
	return KafkaSource{Landing: cfg.Landing, Schema: cfg.Schema, BronzePath: cfg.Tables.Bronze,
		RejectsPath: cfg.Tables.Rejects, CheckpointPath: KafkaCheckpoint(cfg), Policy: SchemaPolicy(cfg),
		TableProps: specs.SourceTables(cfg).TableProps(nil)}
}

// NewKafkaIngester builds the ingester of a Kafka source, with TLS and SASL from the environment.
func NewKafkaIngester(env Env, src KafkaSource) (*bronze.KafkaIngester, error) {
	k := src.Landing.Kafka
	if k == nil {
		return nil, errors.New("jobs: landing.kind is kafka but landing.kafka is missing")
	}
	if len(k.Brokers) == 0 {
		return nil, errors.New("jobs: landing.kafka.brokers is empty and KAFKA_BROKERS is not set: name at least one broker (host:port)")
	}
	declared, err := declaredColumns(src.Schema)
	if err != nil {
		return nil, err
	}
	times, err := timeParsers(src.Schema)
	if err != nil {
		return nil, err
	}
	clientOpts, err := kafka.ClientOptions(env.Config.LookupEnv)
	if err != nil {
		return nil, err
	}
	start := bronze.StartEarliest
	if k.StartingOffsets == "latest" {
		start = bronze.StartLatest
	}
	return bronze.NewKafkaIngester(env.Lake, bronze.KafkaOptions{
		Brokers:              k.Brokers,
		Topics:               k.TopicList(),
		StartingOffsets:      start,
		MaxRecordsPerTrigger: k.MaxRecordsPerTrigger,
		SkipDataLoss:         !k.FailsOnDataLoss(),
		GroupID:              k.GroupID,
		ClientOptions:        clientOpts,
		Format:               src.Landing.Format,
		Declared:             declared,
		Schema:               src.Policy,
		BronzePath:           src.BronzePath,
		RejectsPath:          src.RejectsPath,
		TableProps:           src.TableProps,
		CheckpointPath:       src.CheckpointPath,
		Limits:               bronze.Limits{MaxLineBytes: int(src.Landing.MaxLineBytes.Bytes), Times: times},
		Logger:               env.Logger,
		Clock:                env.Clock,
	})
}

// KafkaLag is the consumer lag of every partition of the pipeline's Kafka landing (nil for a
// files landing): the log end offset minus the next offset ingest will read.
func KafkaLag(ctx context.Context, env Env) ([]kafka.PartitionLag, error) {
	if env.Config.Landing.Kind != config.LandingKafka {
		return nil, nil
	}
	x, err := NewKafkaIngester(env, topLevelKafkaSource(env.Config))
	if err != nil {
		return nil, err
	}
	return x.Lag(ctx)
}

// GenKafka produces the synthetic workload into the topic of the pipeline's Kafka landing
// (`medallion gen` when landing.kind is kafka), creating the topic with partitions partitions
// (default 4) when it does not exist.
func GenKafka(ctx context.Context, cfg *config.Pipeline, opts gen.Options, partitions int32) (gen.Stats, gen.KafkaStats, error) {
	k := cfg.Landing.Kafka
	if cfg.Landing.Kind != config.LandingKafka || k == nil {
		return gen.Stats{}, gen.KafkaStats{}, errors.New("jobs: the landing is not kafka")
	}
	topics := k.TopicList()
	if len(topics) != 1 {
		return gen.Stats{}, gen.KafkaStats{}, fmt.Errorf("jobs: gen produces into one topic; landing.kafka lists %d", len(topics))
	}
	if len(k.Brokers) == 0 {
		return gen.Stats{}, gen.KafkaStats{}, errors.New("jobs: landing.kafka.brokers is empty and KAFKA_BROKERS is not set")
	}
	clientOpts, err := kafka.ClientOptions(cfg.LookupEnv)
	if err != nil {
		return gen.Stats{}, gen.KafkaStats{}, err
	}
	cl, err := kafka.Conn{Brokers: k.Brokers, Options: clientOpts}.NewClient(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return gen.Stats{}, gen.KafkaStats{}, fmt.Errorf("jobs: %w", err)
	}
	defer cl.Close()
	return gen.GenerateKafka(ctx, gen.KafkaTarget{Client: cl, Topic: topics[0], Partitions: partitions}, opts)
}

// KafkaLagReport is KafkaLag for the report, the status page and `medallion lag`: nil for a
// files landing; a broker that does not answer within 10 s becomes the report's Problem, not an
// error, so the rest of the report is still shown.
func KafkaLagReport(ctx context.Context, env Env) *report.KafkaLag {
	if env.Config.Landing.Kind != config.LandingKafka || env.Config.Landing.Kafka == nil {
		return nil
	}
	out := &report.KafkaLag{Topics: env.Config.Landing.Kafka.TopicList(), Partitions: []kafka.PartitionLag{}}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lag, err := KafkaLag(ctx, env)
	if err != nil {
		out.Problem = err.Error()
		return out
	}
	out.Partitions, out.Total = lag, kafka.TotalLag(lag)
	return out
}

// kafkaLagCollector exports the consumer lag of a Kafka landing on /metrics, measured at each
// scrape: medallion_kafka_consumer_lag{topic,partition} (records) and
// medallion_kafka_lag_up (1 when the brokers answered).
type kafkaLagCollector struct {
	env      Env
	lag, end *prometheus.Desc
	up       *prometheus.Desc
}

func newKafkaLagCollector(env Env) *kafkaLagCollector {
	return &kafkaLagCollector{
		env: env,
		lag: prometheus.NewDesc("medallion_kafka_consumer_lag", "Records in the partition that ingest has not committed to bronze yet (log end offset minus next offset to ingest).", []string{"topic", "partition"}, nil),
		end: prometheus.NewDesc("medallion_kafka_log_end_offset", "The partition's log end offset (high watermark).", []string{"topic", "partition"}, nil),
		up:  prometheus.NewDesc("medallion_kafka_lag_up", "1 when the last lag measurement reached the brokers, else 0.", nil, nil),
	}
}

func (c *kafkaLagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.end
	ch <- c.up
}

// Collect measures every Kafka source's lag (a several-source config may have more than one;
// their topics tell them apart). up is 1 only when every source's brokers answered.
func (c *kafkaLagCollector) Collect(ch chan<- prometheus.Metric) {
	up := 1.0
	seen := map[string]bool{}
	for _, src := range c.env.Config.AllSources() {
		se, ok := c.env.ForSource(src.Name)
		if !ok || src.Landing.Kind != config.LandingKafka {
			continue
		}
		r := KafkaLagReport(context.Background(), se)
		if r == nil || r.Problem != "" {
			up = 0
			continue
		}
		for _, l := range r.Partitions {
			p := strconv.Itoa(int(l.Partition))
			if seen[l.Topic+"/"+p] {
				continue // two sources reading one topic: one series
			}
			seen[l.Topic+"/"+p] = true
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(l.Lag), l.Topic, p)
			ch <- prometheus.MustNewConstMetric(c.end, prometheus.GaugeValue, float64(l.End), l.Topic, p)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}

// hasKafkaSource reports whether any source of cfg reads Kafka.
func hasKafkaSource(cfg *config.Pipeline) bool {
	for _, s := range cfg.AllSources() {
		if s.Landing.Kind == config.LandingKafka {
			return true
		}
	}
	return false
}
