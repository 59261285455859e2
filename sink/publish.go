package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/kafka"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrTableReplaced: the sink's position names another Delta table (same path, another table
// id: the table was dropped and created again). Its versions do not follow those published.
var ErrTableReplaced = errors.New("sink: the table was replaced since the sink last published")

// Spec is one sink as Publish needs it (jobs builds it from the config's sinks: entry).
type Spec struct {
	// Name is the sink's name: its transactional id and position group are derived from it.
	Name string
	// Table is the table's path as the config names it (the medallion.table header).
	Table string
	// Topic is the Kafka topic; created compacted with Partitions partitions when missing.
	Topic      string
	Partitions int32
	// Key are the key columns (a gold table's window and group-by columns); nil: every
	// non-null column of the row.
	Key []string
}

// TransactionalID is the sink's Kafka transactional id, and the consumer group that keeps its
// position.
func (s Spec) TransactionalID() string { return "medallion-sink-" + s.Name }

// Head is what a feed says of its table now.
type Head struct {
	Version   int64     // the latest version
	Timestamp time.Time // its commit time
	TableID   string    // the Delta table id (metaData.id)
	FeedOn    bool      // the change data feed is on at Version
}

// Feed is the table a sink publishes: its head, its change feed, and its rows at a version
// (TableFeed adapts a *table.Table).
type Feed interface {
	Head(ctx context.Context) (Head, error)
	Changes(ctx context.Context, from, to int64) iter.Seq2[table.ChangeSet, error]
	Rows(ctx context.Context, version int64) iter.Seq2[*pq.Batch, error]
}

// TableFeed is the Feed of a Delta table.
func TableFeed(t *table.Table) Feed { return tableFeed{t} }

type tableFeed struct{ t *table.Table }

func (f tableFeed) Head(ctx context.Context) (Head, error) {
	snap, err := f.t.Latest(ctx)
	if err != nil {
		return Head{}, err
	}
	return Head{Version: snap.Version(), Timestamp: snap.Timestamp(), TableID: snap.Metadata().ID,
		FeedOn: table.ChangeFeedOn(snap)}, nil
}

func (f tableFeed) Rows(ctx context.Context, version int64) iter.Seq2[*pq.Batch, error] {
	return f.t.Scan(ctx, table.ScanOptions{Version: &version})
}

func (f tableFeed) Changes(ctx context.Context, from, to int64) iter.Seq2[table.ChangeSet, error] {
	return f.t.Changes(ctx, from, to)
}

// Options tune a publication; the zero value is the defaults.
type Options struct {
	// MaxRecordsPerTransaction ends a transaction after the version that brings it to this
	// many records. Default 100000.
	MaxRecordsPerTransaction int
	// TransactionTimeout is the broker's limit on an open transaction (a killed publisher's is
	// aborted after it, unless the next run fences it first). Default 1m.
	TransactionTimeout time.Duration
	// Metrics count the change rows published (nil: not counted).
	Metrics *Metrics
	Logger  *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxRecordsPerTransaction <= 0 {
		o.MaxRecordsPerTransaction = 100_000
	}
	if o.TransactionTimeout <= 0 {
		o.TransactionTimeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Report is what one publication did.
type Report struct {
	Sink  string `json:"sink"`
	Table string `json:"table"`
	Topic string `json:"topic"`
	// TopicCreated: this run created the topic (compacted).
	TopicCreated bool `json:"topicCreated,omitempty"`
	// FromVersion is the first version this run read; ToVersion the table's latest, which the
	// position now names as published when Records > 0 or nothing was left.
	FromVersion int64 `json:"fromVersion"`
	ToVersion   int64 `json:"toVersion"`
	// Versions counts the versions that had change rows.
	Versions     int   `json:"versions"`
	Transactions int   `json:"transactions"`
	Records      int64 `json:"records"`
	Counts
	// UpToDate: there was nothing to publish.
	UpToDate bool `json:"upToDate,omitempty"`
	// Snapshot: this first run published the table's rows at ToVersion (as inserts), because
	// its change feed cannot be read from version 0.
	Snapshot bool `json:"snapshot,omitempty"`
}

// positionMeta is the position's metadata: which table, and the last version published.
type positionMeta struct {
	Table   string `json:"table"`
	TableID string `json:"tableId"`
	Version int64  `json:"version"`
}

// Publish sends the changes of feed's table from the sink's position to its latest version to
// the topic, exactly once (package doc). conn reaches the brokers.
func Publish(ctx context.Context, feed Feed, conn kafka.Conn, spec Spec, opts Options) (Report, error) {
	opts = opts.withDefaults()
	rep := Report{Sink: spec.Name, Table: spec.Table, Topic: spec.Topic, FromVersion: -1, ToVersion: -1}
	head, err := feed.Head(ctx)
	if err != nil {
		return rep, fmt.Errorf("sink %s: table %s: %w", spec.Name, spec.Table, err)
	}
	rep.ToVersion = head.Version
	if rep.TopicCreated, err = ensureTopic(ctx, conn, spec, opts.Logger); err != nil {
		return rep, fmt.Errorf("sink %s: %w", spec.Name, err)
	}
	prod, err := kafka.NewTxnProducer(ctx, conn, kafka.TxnOptions{
		TransactionalID: spec.TransactionalID(), Group: spec.TransactionalID(), PositionTopic: spec.Topic,
		Timeout: opts.TransactionTimeout,
	})
	if err != nil {
		return rep, fmt.Errorf("sink %s: %w", spec.Name, err)
	}
	defer prod.Close()
	from, positioned, err := startVersion(ctx, prod, spec, head)
	if err != nil {
		return rep, err
	}
	rep.FromVersion = from
	if from > head.Version {
		rep.UpToDate = true
		return rep, nil
	}
	if !head.FeedOn {
		return rep, fmt.Errorf("sink %s: %w at version %d of %s: set %s=true (or change_data_feed: true before the table is created)",
			spec.Name, table.ErrChangeFeedOff, head.Version, spec.Table, table.ChangeFeedProperty)
	}
	p := &publisher{spec: spec, opts: opts, feed: feed, prod: prod, head: head, rep: &rep,
		enc: &encoder{topic: spec.Topic, table: spec.Table, keyCols: spec.Key}}
	err = p.run(ctx, from)
	if err != nil && !positioned && rep.Transactions == 0 && unreadableFromStart(err) {
		// A first run whose feed cannot be read from version 0 (turned on later, its early
		// commits cleaned up, its change files vacuumed): the table's rows at the head stand
		// for its history, and the feed goes on from the next version.
		opts.Logger.Info("the change feed cannot be read from version 0: publishing the table's rows at its latest version",
			"sink", spec.Name, "table", spec.Table, "version", head.Version, "reason", err)
		rep = Report{Sink: rep.Sink, Table: rep.Table, Topic: rep.Topic, TopicCreated: rep.TopicCreated,
			FromVersion: head.Version, ToVersion: head.Version, Snapshot: true}
		err = p.snapshot(ctx)
	}
	if err != nil {
		err = fmt.Errorf("sink %s: %w", spec.Name, err)
	}
	return rep, err
}

// unreadableFromStart reports the errors of a change feed read that cannot start at version 0.
func unreadableFromStart(err error) bool {
	return errors.Is(err, table.ErrChangeFeedOff) || errors.Is(err, table.ErrChangeDataGone) || errors.Is(err, txlog.ErrVersionNotFound)
}

// startVersion is the first version to publish: the position's, 0 for a new sink (false: no
// position yet).
func startVersion(ctx context.Context, prod *kafka.TxnProducer, spec Spec, head Head) (int64, bool, error) {
	pos, ok, err := prod.Position(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("sink %s: %w", spec.Name, err)
	}
	if !ok {
		return 0, false, nil
	}
	var meta positionMeta
	if err := json.Unmarshal([]byte(pos.Metadata), &meta); err != nil {
		return 0, false, fmt.Errorf("sink %s: the position of group %s (offset %d) has metadata %q, not a medallion sink's: is another client using the group?",
			spec.Name, spec.TransactionalID(), pos.Next, pos.Metadata)
	}
	if meta.TableID != head.TableID {
		return 0, false, fmt.Errorf("%w: sink %s published table id %s (%s) up to version %d, and %s is now table id %s: to publish the new table from scratch, delete topic %s and consumer group %s",
			ErrTableReplaced, spec.Name, meta.TableID, meta.Table, meta.Version, spec.Table, head.TableID, spec.Topic, spec.TransactionalID())
	}
	if pos.Next > head.Version+1 {
		return 0, false, fmt.Errorf("sink %s: the position says version %d was published, but table %s ends at version %d", spec.Name, pos.Next-1, spec.Table, head.Version)
	}
	return pos.Next, true, nil
}

// ensureTopic creates the topic, compacted, when it is missing; an existing topic that is not
// compacted is used with a warning (it still holds every change, but not only the last).
func ensureTopic(ctx context.Context, conn kafka.Conn, spec Spec, log *slog.Logger) (bool, error) {
	cl, err := conn.NewClient()
	if err != nil {
		return false, err
	}
	defer cl.Close()
	compact := "compact"
	_, created, err := kafka.EnsureTopicWith(ctx, cl, spec.Topic, spec.Partitions, map[string]*string{"cleanup.policy": &compact})
	if err != nil || created {
		return created, err
	}
	policy, err := kafka.TopicConfig(ctx, cl, spec.Topic, "cleanup.policy")
	if err != nil {
		return false, err
	}
	if !strings.Contains(policy, "compact") {
		log.Warn("the sink's topic is not compacted: it keeps every change, and a reader rebuilding the table must read them all",
			"sink", spec.Name, "topic", spec.Topic, "cleanup.policy", policy)
	}
	return false, nil
}

// publisher is one run's state.
type publisher struct {
	spec Spec
	opts Options
	feed Feed
	prod *kafka.TxnProducer
	head Head
	enc  *encoder
	rep  *Report

	open    bool   // a transaction is open
	pending int64  // records in the open transaction
	counts  Counts // of the open transaction
	types   map[string]int64
}

// run publishes versions [from, head] in transactions of whole versions.
func (p *publisher) run(ctx context.Context, from int64) error {
	for cs, err := range p.feed.Changes(ctx, from, p.head.Version) {
		if err != nil {
			return p.fail(ctx, err)
		}
		recs, n, err := p.enc.records(cs)
		if err != nil {
			return p.fail(ctx, err)
		}
		if len(recs) == 0 {
			continue
		}
		if !p.open {
			if err := p.prod.Begin(); err != nil {
				return err
			}
			p.open, p.pending, p.counts, p.types = true, 0, Counts{}, map[string]int64{}
		}
		for _, r := range recs {
			p.prod.Produce(ctx, r)
			p.types[headerValue(r, HeaderChangeType)]++
		}
		if err := p.prod.Err(); err != nil {
			return p.fail(ctx, err)
		}
		p.pending += int64(len(recs))
		p.counts.add(n)
		p.rep.Versions++
		if p.pending >= int64(p.opts.MaxRecordsPerTransaction) {
			if err := p.commit(ctx, cs.Version); err != nil {
				return err
			}
		}
	}
	if p.open {
		return p.commit(ctx, p.head.Version)
	}
	return nil
}

// commit commits the open transaction with the position after version last.
func (p *publisher) commit(ctx context.Context, last int64) error {
	meta, err := json.Marshal(positionMeta{Table: p.spec.Table, TableID: p.head.TableID, Version: last})
	if err != nil {
		return err
	}
	p.open = false
	if err := p.prod.Commit(ctx, kafka.Position{Next: last + 1, Metadata: string(meta)}); err != nil {
		return fmt.Errorf("publish versions up to %d: %w", last, err)
	}
	p.rep.Transactions++
	p.rep.Records += p.pending
	p.rep.Counts.add(p.counts)
	p.opts.Metrics.published(p.spec, p.types)
	p.opts.Logger.Debug("published", "sink", p.spec.Name, "through_version", last, "records", p.pending)
	return nil
}

// snapshot publishes the table's rows at the head version as inserts of that version, in one
// transaction that commits the position after it.
func (p *publisher) snapshot(ctx context.Context) error {
	if err := p.prod.Begin(); err != nil {
		return err
	}
	p.open, p.pending, p.counts, p.types = true, 0, Counts{}, map[string]int64{}
	for b, err := range p.feed.Rows(ctx, p.head.Version) {
		if err != nil {
			return p.fail(ctx, err)
		}
		recs, err := p.enc.snapshotRecords(b, p.head.Version, p.head.Timestamp)
		if err != nil {
			return p.fail(ctx, err)
		}
		for _, r := range recs {
			p.prod.Produce(ctx, r)
		}
		if err := p.prod.Err(); err != nil {
			return p.fail(ctx, err)
		}
		p.pending += int64(len(recs))
		p.counts.Upserts += int64(len(recs))
		p.types[string(table.ChangeInsert)] += int64(len(recs))
	}
	if p.pending > 0 {
		p.rep.Versions = 1
		return p.commit(ctx, p.head.Version)
	}
	// An empty table: nothing to publish, and no position to commit without a record; the
	// next run tries version 0 again and, failing, this again.
	return p.fail(ctx, nil)
}

// fail aborts the open transaction (none of its records becomes visible) and returns cause.
func (p *publisher) fail(ctx context.Context, cause error) error {
	if !p.open {
		return cause
	}
	p.open = false
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := p.prod.Abort(actx); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// headerValue is the value of the record's header key, "" when it has none.
func headerValue(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
