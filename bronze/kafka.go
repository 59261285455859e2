package bronze

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/kafka"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// Starting positions of a partition the ingest checkpoint does not know yet.
const (
	StartEarliest = "earliest"
	StartLatest   = "latest"
)

// ErrDataLoss (kafka.ErrDataLoss): offsets the ingest checkpoint expected to read are no longer
// in the topic (retention deleted them, or the topic was recreated). The error names the topic,
// partition and offset range; landing.kafka.fail_on_data_loss: false skips them and counts them
// instead.
var ErrDataLoss = kafka.ErrDataLoss

// ErrKafkaStalled (kafka.ErrStalled): a claimed offset range made no progress for
// KafkaOptions.StallTimeout (the broker is down or unreachable); franz-go retries forever, so the
// ingest has its own deadline.
var ErrKafkaStalled = kafka.ErrStalled

// KafkaOptions configure a KafkaIngester. Paths are keys under the lake bucket.
type KafkaOptions struct {
	Brokers []string
	Topics  []string
	// StartingOffsets is where a first run starts: StartEarliest (default) or StartLatest. A
	// partition that appears later (partitions added to the topic) starts at its earliest
	// offset, as in Spark, so that none of its records is missed.
	StartingOffsets string
	// MaxRecordsPerTrigger bounds the offsets one batch reads, over all partitions, shared in
	// proportion to what each has to read. Default 1,000,000.
	MaxRecordsPerTrigger int64
	// SkipDataLoss: offsets that retention deleted before they were read are skipped and
	// counted (fail_on_data_loss: false) instead of failing the run with ErrDataLoss.
	SkipDataLoss bool
	// GroupID, when set, is a consumer group to which each committed batch's end offsets are
	// also committed, only so that the usual Kafka tools (kafka-consumer-groups, Burrow) show
	// the lag. It is never read back: the ingest checkpoint is the position. Best effort.
	GroupID string
	// ClientOptions are extra franz-go options: TLS, SASL (kafka.ClientOptions reads them from
	// the environment).
	ClientOptions []kgo.Opt
	Format        string // FormatJSON (one JSON object per record value) or FormatCSV (one CSV record, declared column order)
	Declared      *txlog.StructType
	Schema        SchemaPolicy // as IngestOptions.Schema
	BronzePath    string
	RejectsPath   string
	// TableProps are the table properties bronze and rejects are created with
	// (IngestOptions.TableProps).
	TableProps map[string]string
	// CheckpointPath holds this source's batches; it must not be a file ingest's checkpoint.
	CheckpointPath string
	Limits         Limits
	// Workers read and decode parts of a batch (runs of its partitions, see PartRecords) at
	// once; default GOMAXPROCS (as IngestOptions.Workers). It changes speed only: the data files a batch becomes do not.
	Workers int
	// PartRecords and MaxParts cut a batch's partition ranges, in (topic, partition) order,
	// into parts, each written into data files of its own: as many as the batch's records hold
	// PartRecords, at most MaxParts (and one a partition), each about the same size. Defaults
	// 4096 and 16 (DefaultMaxParts).
	PartRecords  int64
	MaxParts     int
	FlushRows    int
	WriteOptions pq.WriteOptions
	OrderWait    time.Duration
	// StallTimeout: reading a claimed range fails with ErrKafkaStalled after this long without a
	// record. Default 2 minutes (a broker restart takes 10-20 s on a loaded machine).
	StallTimeout time.Duration
	Logger       *slog.Logger
	Clock        func() time.Time
}

// KafkaReport is the Kafka part of an ingest Report.
type KafkaReport struct {
	Topics     []string `json:"topics"`
	Partitions int      `json:"partitions"`
	// LostRecords counts offsets skipped because retention deleted them (fail_on_data_loss:
	// false); LostRanges names them, "topic/partition:[from,to)".
	LostRecords int64                `json:"lostRecords"`
	LostRanges  []string             `json:"lostRanges,omitempty"`
	Lag         []kafka.PartitionLag `json:"lag,omitempty"`
	TotalLag    int64                `json:"totalLag"`
}

// KafkaIngester moves Kafka records into the bronze and rejects tables exactly once.
//
// It keeps the file ingest's crash-safety argument, with offset ranges in place of objects:
// batches/N in its checkpoint holds, for every partition, the offset range [from, to) of batch N
// and the batch's fixed ingest time, claimed with put-if-absent before anything is read; both
// tables commit batch N with txn(appId, N) in batch order; commits/N follows. Kafka offsets are
// immutable, so re-running a pending batch reads the very same records; the next batch starts
// where the latest claim ended, so no offset is claimed twice or skipped. A run killed at any
// instant loses nothing and repeats nothing. No consumer group is used: the checkpoint is the
// only position.
type KafkaIngester struct {
	// b is the file ingest's machinery (tables, checkpoint bucket, idempotent commits), reused
	// whole; not embedded, so that its file-only methods (IngestKeys) are not ours.
	b     *Ingester
	kopts KafkaOptions
}

// NewKafkaIngester prepares a Kafka ingester over a lake bucket.
func NewKafkaIngester(lake objstore.Bucket, opts KafkaOptions) (*KafkaIngester, error) {
	if len(opts.Brokers) == 0 {
		return nil, errors.New("bronze: kafka: no brokers")
	}
	if len(opts.Topics) == 0 {
		return nil, errors.New("bronze: kafka: no topic")
	}
	var ok bool
	if opts.StartingOffsets, ok = oneOf(opts.StartingOffsets, StartEarliest, StartLatest); !ok {
		return nil, fmt.Errorf("bronze: kafka: starting offsets %q: want earliest or latest", opts.StartingOffsets)
	}
	if opts.Format, ok = oneOf(opts.Format, FormatJSON, FormatCSV); !ok {
		return nil, fmt.Errorf("bronze: kafka: unknown format %q (want json or csv)", opts.Format)
	}
	if opts.MaxRecordsPerTrigger <= 0 {
		opts.MaxRecordsPerTrigger = 1_000_000
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = 2 * time.Minute
	}
	if opts.PartRecords <= 0 {
		opts.PartRecords = defaultKafkaPartRecords
	}
	if opts.MaxParts <= 0 {
		opts.MaxParts = DefaultMaxParts
	}
	base, err := NewIngester(lake, IngestOptions{
		Format: opts.Format, Declared: opts.Declared, Schema: opts.Schema, BronzePath: opts.BronzePath, RejectsPath: opts.RejectsPath,
		TableProps:     opts.TableProps,
		CheckpointPath: opts.CheckpointPath, Limits: opts.Limits, Workers: opts.Workers, FlushRows: opts.FlushRows,
		WriteOptions: opts.WriteOptions, OrderWait: opts.OrderWait, Logger: opts.Logger, Clock: opts.Clock,
	})
	if err != nil {
		return nil, err
	}
	base.log = base.opts.Logger.With("job", "ingest", "landing", "kafka")
	topics := append([]string(nil), opts.Topics...)
	sort.Strings(topics)
	opts.Topics = topics
	return &KafkaIngester{b: base, kopts: opts}, nil
}

// oneOf is v, or def when v is empty; ok is false when v is neither empty, def nor other.
func oneOf(v, def, other string) (string, bool) {
	if v == "" {
		return def, true
	}
	return v, v == def || v == other
}

// kafkaBatch is batches/N of a Kafka ingest checkpoint.
type kafkaBatch struct {
	BatchID    int64 `json:"batchId"`
	IngestTime int64 `json:"ingestTimeMicros"`
	// Ranges lists every partition known at the claim, To == From when it has nothing new, so
	// that the latest batch alone says where each partition stands.
	Ranges []kafka.Range `json:"ranges"`
	// Lost are ranges retention deleted before they were read, skipped (fail_on_data_loss: false).
	Lost []kafka.Range `json:"lost,omitempty"`
}

type kafkaCommit struct {
	commitRecord
	Lost int64 `json:"lost"`
}

// kafkaState is what the checkpoint says: the next offset of every claimed partition.
type kafkaState struct {
	appID     string
	batches   map[int64]*kafkaBatch
	committed map[int64]bool
	next      int64
	claimed   map[kafka.TopicPartition]int64 // end of the latest claimed range
	done      map[kafka.TopicPartition]int64 // end of the latest committed range
}

func (x *KafkaIngester) loadKafkaState(ctx context.Context) (*kafkaState, error) {
	const kind = "kafka ingest"
	appID, err := checkpointAppID(ctx, x.b.ckpt, kind, x.b.opts.CheckpointPath)
	if err != nil {
		return nil, err
	}
	committed, err := committedBatches(ctx, x.b.ckpt, kind)
	if err != nil {
		return nil, err
	}
	st := &kafkaState{appID: appID, batches: map[int64]*kafkaBatch{}, committed: committed,
		claimed: map[kafka.TopicPartition]int64{}, done: map[kafka.TopicPartition]int64{}}
	err = readBatchRecords(ctx, x.b.ckpt, kind, func(b *kafkaBatch) {
		st.batches[b.BatchID] = b
		st.next = max(st.next, b.BatchID+1)
	})
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(st.batches))
	for id := range st.batches {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		for _, r := range st.batches[id].Ranges {
			st.claimed[r.TopicPartition()] = r.To
			if st.committed[id] {
				st.done[r.TopicPartition()] = r.To
			}
		}
	}
	return st, nil
}

// newClient is a franz-go client on the configured brokers, reading no partition yet.
func (x *KafkaIngester) newClient(extra ...kgo.Opt) (*kgo.Client, error) {
	// Requests retry for as long as a read may stall: a broker restart (10-20 s) is waited out,
	// not failed on franz-go's default 30 s for some requests and forever for others.
	conn := kafka.Conn{Brokers: x.kopts.Brokers, Options: x.kopts.ClientOptions}
	cl, err := conn.NewClient(append([]kgo.Opt{kgo.RetryTimeout(x.kopts.StallTimeout)}, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("bronze: %w", err)
	}
	return cl, nil
}

// listOffsets returns the start and end offset of every partition of the topics, waiting out
// brokers that cannot be reached for up to StallTimeout; a missing topic fails at once.
func (x *KafkaIngester) listOffsets(ctx context.Context, adm *kgo.Client) (starts, ends map[kafka.TopicPartition]int64, err error) {
	starts, ends, err = kafka.ListOffsetsRetrying(ctx, adm, x.kopts.Topics, x.kopts.StallTimeout, x.b.log)
	if err != nil && ctx.Err() == nil {
		return nil, nil, fmt.Errorf("bronze: %w", err)
	}
	return starts, ends, nil
}

// Run ingests until bronze holds every record that was in the topics when the run started
// (AvailableNow semantics): first any batch a crashed run left pending, then new offsets,
// MaxRecordsPerTrigger per batch.
func (x *KafkaIngester) Run(ctx context.Context) (Report, error) {
	start := time.Now()
	rep := Report{Kafka: &KafkaReport{Topics: x.kopts.Topics}}
	st, err := x.loadKafkaState(ctx)
	if err != nil {
		return rep, err
	}
	// Before a table is created: a table gone with its batches is refused, not made anew.
	if err := x.b.checkCommitted(ctx, &state{appID: st.appID, committed: st.committed}, "kafka ingest checkpoint "+x.b.opts.CheckpointPath); err != nil {
		return rep, err
	}
	// A bronze table a file ingest created is refused: its rows would lack the Kafka columns.
	err = x.b.ensureTables(ctx, KafkaBronzeSchema(x.b.opts.Declared), func(schema *txlog.StructType) error {
		if schema.Field(ColKafkaOffset) == nil {
			return fmt.Errorf("bronze: table %s has no %s column: it was written by a file ingest; give the Kafka source its own bronze table", x.b.opts.BronzePath, ColKafkaOffset)
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	cl, err := x.newClient()
	if err != nil {
		return rep, err
	}
	defer cl.Close()
	adm := cl // offsets and the monitoring group are asked on the same client
	for _, id := range pendingBatches(st.batches, st.committed) {
		x.b.log.Info("re-running pending batch", "batch", id)
		if err := x.runKafkaBatch(ctx, adm, st, st.batches[id], &rep); err != nil {
			return rep, err
		}
	}
	// The target: what the topics held at the start. A topic that keeps receiving records does
	// not keep this run going; the next run takes the rest.
	_, target, err := x.listOffsets(ctx, adm)
	if err != nil {
		return rep, err
	}
	rep.Kafka.Partitions = len(target)
	for {
		starts, ends, err := x.listOffsets(ctx, adm)
		if err != nil {
			return rep, err
		}
		for k, e := range target {
			ends[k] = min(ends[k], e)
		}
		b, err := x.plan(st, starts, ends)
		if err != nil {
			return rep, err
		}
		if b == nil {
			break
		}
		data, _ := json.Marshal(b)
		err = objstore.PutBytesIfAbsent(ctx, x.b.ckpt, batchKey(b.BatchID), data)
		if errors.Is(err, objstore.ErrAlreadyExists) {
			// Another ingester claimed this batch number: learn its claims and plan again.
			if st, err = x.loadKafkaState(ctx); err != nil {
				return rep, err
			}
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("bronze: claim kafka batch %d: %w", b.BatchID, err)
		}
		st.batches[b.BatchID] = b
		for _, r := range b.Ranges {
			st.claimed[r.TopicPartition()] = r.To
		}
		st.next++
		if err := x.runKafkaBatch(ctx, adm, st, b, &rep); err != nil {
			return rep, err
		}
	}
	x.b.finishReport(ctx, start, &rep)
	if lag, err := x.lag(ctx, adm, st); err == nil {
		rep.Kafka.Lag, rep.Kafka.TotalLag = lag, kafka.TotalLag(lag)
	}
	return rep, nil
}

// plan chooses the next batch's ranges, or nil when nothing is left to read.
func (x *KafkaIngester) plan(st *kafkaState, starts, ends map[kafka.TopicPartition]int64) (*kafkaBatch, error) {
	keys := make([]kafka.TopicPartition, 0, len(ends))
	for k := range ends {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	first := len(st.batches) == 0
	b := &kafkaBatch{BatchID: st.next}
	var avail []int64
	var total int64
	for _, k := range keys {
		end, logStart := ends[k], starts[k]
		pos, known := st.claimed[k]
		if !known {
			pos = logStart
			if first && x.kopts.StartingOffsets == StartLatest {
				pos = end
			}
		}
		switch {
		case pos < logStart:
			lost := kafka.Range{Topic: k.Topic, Partition: k.Partition, From: pos, To: logStart}
			if !x.kopts.SkipDataLoss {
				return nil, fmt.Errorf("bronze: kafka: %s/%d offsets [%d, %d) were deleted (retention) before they were ingested; set landing.kafka.fail_on_data_loss: false to skip them: %w",
					k.Topic, k.Partition, pos, logStart, ErrDataLoss)
			}
			b.Lost = append(b.Lost, lost)
			pos = logStart
		case pos > end:
			// The partition holds fewer offsets than were ingested: the topic was deleted and
			// recreated, or the broker lost acknowledged records.
			if !x.kopts.SkipDataLoss {
				return nil, fmt.Errorf("bronze: kafka: %s/%d ends at offset %d but offsets up to %d were already ingested (topic recreated?): %w",
					k.Topic, k.Partition, end, pos, ErrDataLoss)
			}
			x.b.log.Warn("partition is behind what was ingested; reading it from its start", "topic", k.Topic, "partition", k.Partition, "end", end, "ingested", pos)
			pos = logStart
		}
		b.Ranges = append(b.Ranges, kafka.Range{Topic: k.Topic, Partition: k.Partition, From: pos, To: pos})
		avail = append(avail, end-pos)
		total += end - pos
	}
	if total == 0 && len(b.Lost) == 0 && !(first && x.kopts.StartingOffsets == StartLatest && len(b.Ranges) > 0) {
		return nil, nil
	}
	// Share the limit in proportion to what each partition has, then hand out what rounding
	// left, in partition order.
	limit := min(total, x.kopts.MaxRecordsPerTrigger)
	var given int64
	for i := range b.Ranges {
		take := avail[i]
		if total > limit {
			take = int64(float64(avail[i]) * float64(limit) / float64(total))
		}
		b.Ranges[i].To += take
		given += take
	}
	for i := range b.Ranges {
		if given >= limit {
			break
		}
		more := min(avail[i]-(b.Ranges[i].To-b.Ranges[i].From), limit-given)
		b.Ranges[i].To += more
		given += more
	}
	b.IngestTime = x.b.now().UnixMicro()
	return b, nil
}

// runKafkaBatch reads the batch's ranges, writes data files, commits both tables idempotently
// in batch order, then records the batch as committed.
func (x *KafkaIngester) runKafkaBatch(ctx context.Context, adm *kgo.Client, st *kafkaState, b *kafkaBatch, rep *Report) error {
	var f batchFiles
	var err error
	f.bronzeDone, f.rejectsDone, err = x.b.alreadyCommitted(ctx, st.appID, b.BatchID)
	if err != nil {
		return err
	}
	lost := append([]kafka.Range(nil), b.Lost...)
	if !f.bronzeDone || !f.rejectsDone {
		if err := x.b.checkWritable(ctx); err != nil {
			return err
		}
		var late []kafka.Range
		f.bronzeAdds, f.rejectAdds, f.rep, late, err = x.readBatch(ctx, adm, b)
		if err != nil {
			return err
		}
		lost = append(lost, late...)
		if err := x.b.waitForPredecessor(ctx, st.appID, b.BatchID, "kafka ingest", func(ctx context.Context) (bool, error) {
			st, err := x.loadKafkaState(ctx)
			if err != nil || st.batches[b.BatchID-1] == nil {
				return false, err
			}
			return true, x.runKafkaBatch(ctx, adm, st, st.batches[b.BatchID-1], rep)
		}); err != nil {
			return err
		}
	}
	var lostN int64
	for _, r := range lost {
		lostN += r.To - r.From
		rep.Kafka.LostRanges = append(rep.Kafka.LostRanges, r.String())
	}
	rep.Kafka.LostRecords += lostN
	committed, _, _, err := x.b.commitTables(ctx, st.appID, b.BatchID, "kafka batch", &f)
	if err != nil {
		return err
	}
	rec := kafkaCommit{commitRecord: committed, Lost: lostN}
	data, _ := json.Marshal(rec)
	if err := objstore.PutBytesIfAbsent(ctx, x.b.ckpt, commitKey(b.BatchID), data); err != nil && !errors.Is(err, objstore.ErrAlreadyExists) {
		return fmt.Errorf("bronze: record kafka batch %d: %w", b.BatchID, err)
	}
	st.committed[b.BatchID] = true
	for _, r := range b.Ranges {
		st.done[r.TopicPartition()] = max(st.done[r.TopicPartition()], r.To)
	}
	x.commitGroup(ctx, adm, b)
	rep.Batches++
	rep.merge(f.rep)
	x.b.log.Info("batch committed", "batch", b.BatchID, "rows", f.rep.Rows, "rejected", f.rep.Rejected,
		"lost", lostN, "bronze_version", rec.BronzeVersion)
	return nil
}

// commitGroup commits the batch's end offsets to GroupID, for monitoring only: a failure is
// logged, never an error (bronze already holds the batch, and the checkpoint is the position).
func (x *KafkaIngester) commitGroup(ctx context.Context, adm *kgo.Client, b *kafkaBatch) {
	if x.kopts.GroupID == "" {
		return
	}
	if err := kafka.CommitGroupOffsets(ctx, adm, x.kopts.GroupID, b.Ranges); err != nil {
		x.b.log.Warn("could not commit offsets to the monitoring consumer group", "group", x.kopts.GroupID, "batch", b.BatchID, "err", err)
	}
}

// readBatch reads the batch's ranges, cut in (topic, partition) order into parts (cutParts, by
// their record counts: never by the number of cores), each part's partitions one after the
// other in offset order into data files of its own, the parts on the workers at once. The adds
// are listed part after part, so bronze's commit order is the batch's arrival order (topic,
// partition, offset), and the batch becomes the same rows in the same files on any machine. late are ranges
// retention deleted after the claim and before this read (fail_on_data_loss: false).
func (x *KafkaIngester) readBatch(ctx context.Context, adm *kgo.Client, b *kafkaBatch) (bronzeAdds, rejectAdds []*txlog.Add, rep Report, late []kafka.Range, err error) {
	var todo []kafka.Range
	for _, r := range b.Ranges {
		if r.To > r.From {
			todo = append(todo, r)
		}
	}
	if len(todo) == 0 {
		return nil, nil, rep, nil, nil
	}
	// A pending batch re-run long after its claim may find part of its ranges deleted.
	starts, _, err := x.listOffsets(ctx, adm)
	if err != nil {
		return nil, nil, rep, nil, err
	}
	for i, r := range todo {
		if s := starts[r.TopicPartition()]; s > r.From {
			gone := kafka.Range{Topic: r.Topic, Partition: r.Partition, From: r.From, To: min(s, r.To)}
			if !x.kopts.SkipDataLoss {
				return nil, nil, rep, nil, fmt.Errorf("bronze: kafka: %s/%d offsets [%d, %d) of batch %d were deleted (retention) before they were ingested; set landing.kafka.fail_on_data_loss: false to skip them: %w",
					r.Topic, r.Partition, gone.From, gone.To, b.BatchID, ErrDataLoss)
			}
			late = append(late, gone)
			todo[i].From = gone.To
		}
	}
	// Retention may have emptied a range since the claim.
	todo = slices.DeleteFunc(todo, func(r kafka.Range) bool { return r.To <= r.From })
	if len(todo) == 0 {
		return nil, nil, rep, late, nil
	}
	sizes := make([]int64, len(todo))
	for i, r := range todo {
		sizes[i] = r.To - r.From
	}
	bounds := cutParts(sizes, x.kopts.PartRecords, x.kopts.MaxParts)
	type result struct {
		bronze, rejects []*txlog.Add
		rep             Report
	}
	results := make([]result, len(bounds)-1)
	// A client a worker, made on its first part: a part's reads never overlap another's.
	workers := min(x.b.opts.Workers, len(results))
	clients := make([]*kgo.Client, workers)
	decoders := make([]*kafkaDecoder, workers) // kept from part to part: their batches have grown
	defer func() {
		for _, cl := range clients {
			if cl != nil {
				cl.Close()
			}
		}
	}()
	err = runParts(ctx, len(results), workers, func(ctx context.Context, w, p int) error {
		if clients[w] == nil {
			// An offset that is gone fails the read, never silently jumps.
			cl, err := x.newClient(kafka.RangeReaderOptions()...)
			if err != nil {
				return err
			}
			clients[w] = cl
		}
		if decoders[w] == nil {
			dec, err := newKafkaDecoder(x.b.opts.Declared, x.b.opts.Limits)
			if err != nil {
				return err
			}
			decoders[w] = dec
		}
		r := &results[p]
		var err error
		r.bronze, r.rejects, r.rep, err = x.kafkaWorker(ctx, clients[w], decoders[w], todo[bounds[p]:bounds[p+1]], b.IngestTime)
		return err
	})
	if err != nil {
		return nil, nil, rep, nil, err
	}
	for _, r := range results {
		bronzeAdds = append(bronzeAdds, r.bronze...)
		rejectAdds = append(rejectAdds, r.rejects...)
		rep.merge(r.rep)
	}
	return bronzeAdds, rejectAdds, rep, late, nil
}

// kafkaWorker reads one part's ranges one after the other with the worker's client and decoder
// (empty, and left empty when it returns without an error) into data files of the part's own.
func (x *KafkaIngester) kafkaWorker(ctx context.Context, cl *kgo.Client, dec *kafkaDecoder, ranges []kafka.Range, ingestTime int64) ([]*txlog.Add, []*txlog.Add, Report, error) {
	var rep Report
	if len(ranges) == 0 {
		return nil, nil, rep, nil
	}
	out, err := x.b.openOutputs(dec.Decoder)
	if err != nil {
		return nil, nil, rep, err
	}
	for _, r := range ranges {
		st, err := x.readRange(ctx, cl, dec, r, ingestTime)
		rep.add(st) // a record is never a blank line: st.BlankLines is 0
		if err != nil {
			return nil, nil, rep, err
		}
	}
	bronzeAdds, rejectAdds, err := out.close(ctx)
	if err != nil {
		return nil, nil, rep, err
	}
	return bronzeAdds, rejectAdds, rep, nil
}

// readRange decodes one partition's records from r.From to r.To-1 (kafka.ReadRange).
func (x *KafkaIngester) readRange(ctx context.Context, cl *kgo.Client, dec *kafkaDecoder, r kafka.Range, ingestTime int64) (ObjectStats, error) {
	var st ObjectStats
	source := KafkaSourceName(r.Topic, r.Partition)
	var flushErr error
	err := kafka.ReadRange(ctx, cl, r, x.kopts.StallTimeout, func(rec *kgo.Record) error {
		dec.record(&st, rec, source, x.b.opts.Format, ingestTime)
		flushErr = dec.maybeFlush(ctx, int64(len(rec.Value)))
		return flushErr
	})
	if err != nil && err != flushErr && ctx.Err() == nil {
		err = fmt.Errorf("bronze: %w", err) // the broker's side: name the stage
	}
	return st, err
}

// lag is each partition's log end offset minus the next offset bronze will read.
func (x *KafkaIngester) lag(ctx context.Context, adm *kgo.Client, st *kafkaState) ([]kafka.PartitionLag, error) {
	_, ends, err := x.listOffsets(ctx, adm)
	if err != nil {
		return nil, err
	}
	return kafka.Lags(ends, st.done), nil
}

// Lag reads the checkpoint and the brokers' end offsets: the consumer lag of every partition,
// for /metrics, the status page and the report. It writes nothing.
func (x *KafkaIngester) Lag(ctx context.Context) ([]kafka.PartitionLag, error) {
	cl, err := x.newClient()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	st := &kafkaState{done: map[kafka.TopicPartition]int64{}}
	if _, err := x.b.ckpt.Stat(ctx, "metadata.json"); err == nil {
		if st, err = x.loadKafkaState(ctx); err != nil {
			return nil, err
		}
	}
	return x.lag(ctx, cl, st)
}
