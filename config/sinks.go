package config

import (
	"fmt"
	"net"
	"sort"
	"strings"
)

// Sink kinds.
const (
	SinkKafka = "kafka" // a Kafka topic, one record per changed row (docs/change-data-feed.md)
)

// Sink publishes a table's change feed outside the lake (DESIGN.md §8, second round):
// `medallion run publish` and serve's publish job send every change of Table since the last
// publication, exactly once.
type Sink struct {
	// Name identifies the sink (--sink NAME, metrics, the Kafka transactional id and the group
	// that keeps its position). Required, unique, letters, digits, '_' and '-'.
	Name string `yaml:"name"`
	// Table is the path of one of the config's tables (a gold table, a joined table, a
	// silver table, ...), as the config names it. Required. Its change data feed must be on.
	Table string `yaml:"table"`
	// Kind is kafka, the only kind so far. Default kafka.
	Kind string `yaml:"kind"`
	// Topic is the Kafka topic the changes go to: created compacted (cleanup.policy=compact)
	// when it does not exist. Required; one sink per topic.
	Topic string `yaml:"topic"`
	// Brokers are the bootstrap brokers, host:port. Default: KAFKA_BROKERS (comma-separated).
	// TLS and SASL come from the environment (KAFKA_TLS*, KAFKA_SASL_*), as for Kafka sources.
	Brokers []string `yaml:"brokers,omitempty"`
	// Partitions is the partition count of the topic when the sink creates it. Default 1. Never
	// add partitions to the topic later: a key would move to another partition, and the
	// compacted topic would hold its old value there too.
	Partitions int32 `yaml:"partitions,omitempty"`
}

// defaultSinks fills each sink's defaults.
func (p *Pipeline) defaultSinks() {
	for i := range p.Sinks {
		s := &p.Sinks[i]
		setStr(&s.Kind, SinkKafka)
		if s.Partitions == 0 {
			s.Partitions = 1
		}
	}
}

// SinkByName returns the sink of that name.
func (p *Pipeline) SinkByName(name string) (Sink, bool) {
	for _, s := range p.Sinks {
		if s.Name == name {
			return s, true
		}
	}
	return Sink{}, false
}

// GoldOfTable returns the gold aggregation whose table is path, false for any other table.
func (p *Pipeline) GoldOfTable(path string) (Gold, bool) {
	path = strings.Trim(path, "/")
	for _, g := range p.Gold {
		if strings.Trim(g.Table, "/") == path {
			return g, true
		}
	}
	return Gold{}, false
}

// feedOff names the gold or join entry whose table is path when it turns the change data feed
// off, "" otherwise.
func (p *Pipeline) feedOff(path string) string {
	for i, g := range p.Gold {
		if strings.Trim(g.Table, "/") == path && !g.ChangeFeed() {
			return fmt.Sprintf("gold[%d] (%s)", i, g.Name)
		}
	}
	for i, j := range p.Joins {
		if strings.Trim(j.Table, "/") == path && !j.ChangeFeed() {
			return fmt.Sprintf("joins[%d] (%s)", i, j.Name)
		}
	}
	return ""
}

// tablesByPath maps each layer table path the config declares to the field that declares it.
func (p *Pipeline) tablesByPath() map[string]string {
	out := map[string]string{}
	p.declaredPaths(func(field, path string, layer bool) {
		if path = strings.Trim(path, "/"); layer && path != "" {
			if _, dup := out[path]; !dup {
				out[path] = field
			}
		}
	})
	return out
}

// declaredPaths calls add with every path the config declares and the field that declares it,
// in config order; layer says whether it is a table of the pipeline's layers (bronze, rejects,
// silver, a joined table, gold, a quarantine) rather than a landing prefix, a checkpoint or
// the event log.
func (p *Pipeline) declaredPaths(add func(field, path string, layer bool)) {
	for i, s := range p.AllSources() {
		pre := ""
		if i > 0 {
			pre = fmt.Sprintf("sources[%d].", i-1)
		}
		add(pre+"landing.path", s.Landing.Path, false)
		add(pre+"tables.bronze", s.Tables.Bronze, true)
		add(pre+"tables.rejects", s.Tables.Rejects, true)
		add(pre+"tables.silver", s.Tables.Silver, true)
		add(pre+"stream.checkpoint", s.Stream.Checkpoint, false)
	}
	for i, j := range p.Joins {
		add(fmt.Sprintf("joins[%d].table", i), j.Table, true)
		add(fmt.Sprintf("joins[%d].quarantine", i), j.Quarantine, true)
		add(fmt.Sprintf("joins[%d].checkpoint", i), j.Checkpoint, false)
	}
	for i, g := range p.Gold {
		add(fmt.Sprintf("gold[%d].table", i), g.Table, true)
		add(fmt.Sprintf("gold[%d].quarantine", i), g.Quarantine, true)
	}
	if el, on := p.EventLogPath(); on {
		add("event_log", el, false)
	}
}

// sinks checks the sinks: names unique, a table of the config, kind kafka, a topic of its own
// that no source reads, brokers as host:port.
func (v *validator) sinks() {
	tables := v.p.tablesByPath()
	landingTopics := map[string]string{}
	for i, s := range v.p.AllSources() {
		if s.Landing.Kind != LandingKafka || s.Landing.Kafka == nil {
			continue
		}
		pre := ""
		if i > 0 {
			pre = fmt.Sprintf("sources[%d].", i-1)
		}
		for _, t := range s.Landing.Kafka.TopicList() {
			landingTopics[t] = pre + "landing.kafka"
		}
	}
	if pub := v.p.Jobs.Publish; len(v.p.Sinks) == 0 && (pub.Schedule != "" || pub.After != "") {
		v.fail("jobs.publish", "the config has no sinks: add a sinks: entry, e.g. - {name: gold_to_kafka, table: gold/events_5m, kind: kafka, topic: events_5m_changes}")
	}
	names, topics := map[string]int{}, map[string]int{}
	for i, s := range v.p.Sinks {
		path := fmt.Sprintf("sinks[%d]", i)
		v.uniqueName("sinks", "sink", i, s.Name, "a name such as gold_to_kafka", names)
		switch t := strings.Trim(s.Table, "/"); {
		case t == "":
			v.fail(path+".table", "required: expected the path of one of the config's tables, e.g. %s", exampleTable(tables))
		case tables[t] == "":
			v.fail(path+".table", "unknown table %q: expected the path of one of the config's tables: %s", s.Table, knownTables(tables))
		case v.p.feedOff(t) != "":
			v.fail(path+".table", "%s sets change_data_feed: false: a sink publishes the table's change data feed (remove that line before the table is created)", v.p.feedOff(t))
		}
		if s.Kind != SinkKafka {
			v.fail(path+".kind", "invalid kind %q: expected kafka (the only sink kind)", s.Kind)
		}
		switch {
		case s.Topic == "":
			v.fail(path+".topic", "required: expected the Kafka topic the changes go to, e.g. events_5m_changes")
		case !kafkaTopicRE.MatchString(s.Topic) || s.Topic == "." || s.Topic == "..":
			v.fail(path+".topic", "invalid topic %q: expected 1 to 249 of A-Z a-z 0-9 . _ -", s.Topic)
		case landingTopics[s.Topic] != "":
			v.fail(path+".topic", "topic %q is read by %s: a sink needs a topic of its own", s.Topic, landingTopics[s.Topic])
		default:
			if j, dup := topics[s.Topic]; dup {
				v.fail(path+".topic", "topic %q is also sinks[%d]'s: a compacted topic holds one table", s.Topic, j)
			} else {
				topics[s.Topic] = i
			}
		}
		for j, b := range s.Brokers {
			if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
				v.fail(fmt.Sprintf("%s.brokers[%d]", path, j), "invalid broker %q: expected host:port, e.g. 127.0.0.1:9092", b)
			}
		}
		if s.Partitions < 1 {
			v.fail(path+".partitions", "%d: expected a positive partition count (default 1)", s.Partitions)
		}
	}
}

func knownTables(tables map[string]string) string {
	paths := make([]string, 0, len(tables))
	for p := range tables {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return strings.Join(paths, ", ")
}

func exampleTable(tables map[string]string) string {
	for p, field := range tables {
		if strings.HasPrefix(field, "gold[0].table") {
			return p
		}
	}
	return "gold/events_5m"
}
