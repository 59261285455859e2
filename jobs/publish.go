package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/kafka"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/sink"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// PublishReport is the publish job's summary: what each sink published.
type PublishReport struct {
	Sinks []sink.Report `json:"sinks"`
}

// SinkSpec is a sinks: entry as the sink package needs it: a gold table is keyed by its window
// and group-by columns, any other table by its row.
func SinkSpec(cfg *config.Pipeline, s config.Sink) sink.Spec {
	spec := sink.Spec{Name: s.Name, Table: strings.Trim(s.Table, "/"), Topic: s.Topic, Partitions: s.Partitions}
	if g, ok := cfg.GoldOfTable(s.Table); ok {
		spec.Key = append([]string{gold.ColWindow}, g.GroupBy...)
	}
	return spec
}

// sinkConn is how a sink reaches its brokers: its own, else KAFKA_BROKERS; TLS and SASL from
// the environment, as for Kafka sources.
func sinkConn(cfg *config.Pipeline, s config.Sink) (kafka.Conn, error) {
	brokers := s.Brokers
	if len(brokers) == 0 {
		v, _ := cfg.LookupEnv("KAFKA_BROKERS")
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); b != "" {
				brokers = append(brokers, b)
			}
		}
	}
	if len(brokers) == 0 {
		return kafka.Conn{}, fmt.Errorf("jobs: sink %s: brokers is empty and KAFKA_BROKERS is not set: name at least one broker (host:port)", s.Name)
	}
	opts, err := kafka.ClientOptions(cfg.LookupEnv)
	if err != nil {
		return kafka.Conn{}, err
	}
	return kafka.Conn{Brokers: brokers, Options: opts}, nil
}

// Publish sends every sink's new changes (only: just the sink of that name) to its topic,
// exactly once (package sink). A sink that fails does not stop the others; the error names
// each failed sink. m counts the rows published (nil: not counted).
func Publish(ctx context.Context, env Env, only string, m *sink.Metrics) (PublishReport, error) {
	rep := PublishReport{Sinks: []sink.Report{}}
	if only != "" {
		if _, ok := env.Config.SinkByName(only); !ok {
			return rep, fmt.Errorf("jobs: no sink named %q in the config", only)
		}
	}
	var errs []error
	for _, s := range env.Config.Sinks {
		if only != "" && s.Name != only {
			continue
		}
		r, err := publishSink(ctx, env, s, m)
		rep.Sinks = append(rep.Sinks, r)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return rep, errors.Join(errs...)
}

func publishSink(ctx context.Context, env Env, s config.Sink, m *sink.Metrics) (sink.Report, error) {
	spec := SinkSpec(env.Config, s)
	conn, err := sinkConn(env.Config, s)
	if err != nil {
		return sink.Report{Sink: s.Name, Table: spec.Table, Topic: s.Topic}, err
	}
	tbl := table.Open(objstore.WithPrefix(env.Lake, spec.Table), table.Options{Clock: env.clock})
	rep, err := sink.Publish(ctx, sink.TableFeed(tbl), conn, spec, sink.Options{Metrics: m, Logger: env.Logger})
	if errors.Is(err, txlog.ErrTableNotFound) {
		err = fmt.Errorf("%w (has the stream written table %s yet? run stream first)", err, spec.Table)
	}
	return rep, err
}

// publishJob is the publish job as serve schedules it: every sink, counted on m.
func publishJob(m *sink.Metrics) Func {
	return func(ctx context.Context, env Env) (any, error) { return Publish(ctx, env, "", m) }
}
