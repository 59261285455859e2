package jobs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
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
	// Policy is what a changed Schema may do to the existing bronze table (SchemaPolicy).
	Policy bronze.SchemaPolicy
}

// topLevelKafkaSource is the single-source form's Kafka source.
func topLevelKafkaSource(cfg *config.Pipeline) KafkaSource {
	return KafkaSource{Landing: cfg.Landing, Schema: cfg.Schema, BronzePath: cfg.Tables.Bronze,
		RejectsPath: cfg.Tables.Rejects, CheckpointPath: KafkaCheckpoint(cfg), Policy: SchemaPolicy(cfg)}
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
	lookup := env.Config.LookupEnv
	clientOpts, err := KafkaClientOptions(lookup)
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
		CheckpointPath:       src.CheckpointPath,
		Limits:               bronze.Limits{MaxLineBytes: int(src.Landing.MaxLineBytes.Bytes)},
		Logger:               env.Logger,
		Clock:                env.Clock,
	})
}

// KafkaClientOptions reads the Kafka connection's secrets and TLS settings from the environment
// (never from the config file):
//
//	KAFKA_TLS=true                 connect with TLS (implied by any KAFKA_TLS_* below)
//	KAFKA_TLS_CA_FILE              PEM bundle of the CAs to trust (default: the system's)
//	KAFKA_TLS_CERT_FILE, _KEY_FILE client certificate and key (mutual TLS)
//	KAFKA_TLS_SERVER_NAME          the name to verify instead of the broker's host
//	KAFKA_SASL_MECHANISM           PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
//	KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD
func KafkaClientOptions(lookup func(string) (string, bool)) ([]kgo.Opt, error) {
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	var opts []kgo.Opt
	ca, cert, key, server := get("KAFKA_TLS_CA_FILE"), get("KAFKA_TLS_CERT_FILE"), get("KAFKA_TLS_KEY_FILE"), get("KAFKA_TLS_SERVER_NAME")
	useTLS := ca != "" || cert != "" || key != "" || server != ""
	switch v := strings.ToLower(get("KAFKA_TLS")); v {
	case "", "false", "0":
	case "true", "1":
		useTLS = true
	default:
		return nil, fmt.Errorf("jobs: KAFKA_TLS=%q: expected true or false", v)
	}
	if useTLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: server}
		if ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, fmt.Errorf("jobs: KAFKA_TLS_CA_FILE: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("jobs: KAFKA_TLS_CA_FILE %s holds no PEM certificate", ca)
			}
			tc.RootCAs = pool
		}
		if (cert == "") != (key == "") {
			return nil, errors.New("jobs: KAFKA_TLS_CERT_FILE and KAFKA_TLS_KEY_FILE go together: set both or neither")
		}
		if cert != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return nil, fmt.Errorf("jobs: KAFKA_TLS_CERT_FILE/KAFKA_TLS_KEY_FILE: %w", err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	mech, user, pass := strings.ToUpper(get("KAFKA_SASL_MECHANISM")), get("KAFKA_SASL_USERNAME"), get("KAFKA_SASL_PASSWORD")
	if mech == "" && (user != "" || pass != "") {
		return nil, errors.New("jobs: KAFKA_SASL_USERNAME/PASSWORD are set but KAFKA_SASL_MECHANISM is not: set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	if mech != "" && (user == "" || pass == "") {
		return nil, fmt.Errorf("jobs: KAFKA_SASL_MECHANISM=%s needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD", mech)
	}
	switch mech {
	case "":
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	default:
		return nil, fmt.Errorf("jobs: KAFKA_SASL_MECHANISM=%q: expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	return opts, nil
}

// KafkaLag is the consumer lag of every partition of the pipeline's Kafka landing (nil for a
// files landing): the log end offset minus the next offset ingest will read.
func KafkaLag(ctx context.Context, env Env) ([]bronze.PartitionLag, error) {
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
	clientOpts, err := KafkaClientOptions(cfg.LookupEnv)
	if err != nil {
		return gen.Stats{}, gen.KafkaStats{}, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, clientOpts...)...)
	if err != nil {
		return gen.Stats{}, gen.KafkaStats{}, fmt.Errorf("jobs: kafka client: %w", err)
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
	out := &report.KafkaLag{Topics: env.Config.Landing.Kafka.TopicList(), Partitions: []bronze.PartitionLag{}}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lag, err := KafkaLag(ctx, env)
	if err != nil {
		out.Problem = err.Error()
		return out
	}
	out.Partitions = lag
	for _, l := range lag {
		out.Total += l.Lag
	}
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
