package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/medallion-lake/medallion/internal/backoff"
)

// ErrFenced: another producer with the same transactional id started after this one (a second
// publisher of the same sink): this one can no longer commit and must stop.
var ErrFenced = errors.New("kafka: producer fenced by a newer one with the same transactional id")

// TxnOptions configure a transactional producer.
type TxnOptions struct {
	// TransactionalID identifies the producer across restarts: a new producer with the same id
	// fences the old one and aborts its open transaction. Required.
	TransactionalID string
	// Group is the consumer group whose committed offset on PositionTopic/0 is the producer's
	// position, committed in the same transaction as its records. Required.
	Group string
	// PositionTopic is the topic whose partition 0 carries the position in Group (the topic the
	// producer writes: it exists, and a group offset needs an existing partition). Required.
	PositionTopic string
	// Timeout is the transaction timeout: the broker aborts a transaction left open this long
	// (a producer killed mid-transaction and never restarted). Default 1m.
	Timeout time.Duration
}

func (o TxnOptions) withDefaults() TxnOptions {
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	return o
}

// Position is what a transactional producer last committed: Next (the group's offset, a
// number of the caller's choosing, such as the next table version to publish) and Metadata
// (the offset's metadata, at most a few KB: what the caller needs to check the position is
// its own).
type Position struct {
	Next     int64
	Metadata string
}

// TxnProducer produces records in Kafka transactions, each of which also commits a Position
// as a consumer group's offset (Kafka's exactly-once "consume-transform-produce", with the
// position in place of consumed offsets): a reader in read_committed isolation sees a
// transaction's records exactly when the position that names them is committed, and never
// those of an aborted one. Not safe for concurrent use except Produce.
type TxnProducer struct {
	cl   *kgo.Client
	opts TxnOptions
	// topicID is PositionTopic's id, for TxnOffsetCommit versions that name topics by id.
	topicID [16]byte

	acks
}

// NewTxnProducer connects a transactional producer and initialises its producer id, which
// fences any older producer with the same TransactionalID and waits for the broker to finish
// (commit or abort) the transaction that one left open. extra are client options of the use
// (a partitioner); the default partitions keyed records as Kafka's Java client does.
func NewTxnProducer(ctx context.Context, conn Conn, opts TxnOptions, extra ...kgo.Opt) (*TxnProducer, error) {
	opts = opts.withDefaults()
	if opts.TransactionalID == "" || opts.Group == "" || opts.PositionTopic == "" {
		return nil, errors.New("kafka: a transactional producer needs a transactional id, a group and a position topic")
	}
	all := append([]kgo.Opt{
		kgo.TransactionalID(opts.TransactionalID),
		kgo.TransactionTimeout(opts.Timeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	}, extra...)
	cl, err := conn.NewClient(all...)
	if err != nil {
		return nil, err
	}
	p := &TxnProducer{cl: cl, opts: opts}
	if _, _, err := cl.ProducerID(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka: init transactional producer %s: %w", opts.TransactionalID, fenced(err))
	}
	id, err := topicID(ctx, cl, opts.PositionTopic)
	if err != nil {
		cl.Close()
		return nil, err
	}
	p.topicID = id
	return p, nil
}

// topicID is the topic's id, asked again while the answer is retriable (whileRetriable).
func topicID(ctx context.Context, cl *kgo.Client, topic string) ([16]byte, error) {
	var id [16]byte
	err := whileRetriable(ctx, func() error {
		td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
		if err == nil {
			err = td.Error()
		}
		if err != nil {
			return fmt.Errorf("kafka: describe topic %s: %w", topic, err)
		}
		id = td[topic].ID
		return nil
	})
	return id, err
}

// Client is the producer's franz-go client (its brokers and settings), for admin requests.
func (p *TxnProducer) Client() *kgo.Client { return p.cl }

// Close ends the client; an open transaction is left to the broker, which aborts it when the
// next producer with the same id starts, or after the transaction timeout.
func (p *TxnProducer) Close() { p.cl.Close() }

// Position is the last committed position, false when the group has none yet. It asks for
// stable offsets: while a transaction that commits a position is being completed, the broker
// answers once it is (committed or aborted), so the position and the records it names agree.
//
// Retriable answers (the group coordinator still loading, a fresh cluster creating its offsets
// topic, a transaction still completing) are retried until ctx ends.
func (p *TxnProducer) Position(ctx context.Context) (Position, bool, error) {
	wait := backoff.Backoff{Min: 50 * time.Millisecond, Max: time.Second}
	for attempt := 1; ; attempt++ {
		pos, ok, err := p.position(ctx)
		if err == nil || !kerr.IsRetriable(err) {
			return pos, ok, err
		}
		if serr := wait.Sleep(ctx, attempt); serr != nil {
			return Position{}, false, errors.Join(err, serr)
		}
	}
}

func (p *TxnProducer) position(ctx context.Context) (Position, bool, error) {
	// The partition is named: a fetch of all the group's offsets ignores require_stable (it
	// leaves out a pending transactional commit instead of waiting for it).
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = p.opts.Group, true
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = p.opts.PositionTopic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return Position{}, false, fmt.Errorf("kafka: fetch the position of group %s: %w", p.opts.Group, err)
	}
	code, found := resp.ErrorCode, false
	var pos Position
	take := func(topic string, part int32, off int64, meta *string, ec int16) {
		if topic != p.opts.PositionTopic || part != 0 {
			return
		}
		if ec != 0 {
			code = ec
			return
		}
		if off >= 0 {
			found, pos.Next = true, off
			if meta != nil {
				pos.Metadata = *meta
			}
		}
	}
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			code = g.ErrorCode
		}
		for _, t := range g.Topics {
			for _, pp := range t.Partitions {
				take(t.Topic, pp.Partition, pp.Offset, pp.Metadata, pp.ErrorCode)
			}
		}
	}
	for _, t := range resp.Topics {
		for _, pp := range t.Partitions {
			take(t.Topic, pp.Partition, pp.Offset, pp.Metadata, pp.ErrorCode)
		}
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return Position{}, false, fmt.Errorf("kafka: position of group %s: %w", p.opts.Group, err)
	}
	return pos, found, nil
}

// Begin starts a transaction.
func (p *TxnProducer) Begin() error {
	p.reset()
	if err := p.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("kafka: begin transaction: %w", fenced(err))
	}
	return nil
}

// Produce sends rec in the open transaction without waiting for it; a failure is kept and
// returned by Err and Commit. A record's Value must not change until Commit or Abort returns.
func (p *TxnProducer) Produce(ctx context.Context, rec *kgo.Record) {
	p.sent()
	p.cl.Produce(ctx, rec, p.done)
}

// Commit waits for the transaction's records, commits pos as the group's offset within the
// transaction, and commits the transaction; after a failure it aborts and returns the error
// (nothing of the transaction is visible to read_committed readers, the position is unchanged).
// A transaction with no record commits nothing and leaves the position as it was.
func (p *TxnProducer) Commit(ctx context.Context, pos Position) error {
	p.wg.Wait()
	if err := p.cl.Flush(ctx); err != nil {
		return p.abortWith(ctx, fmt.Errorf("kafka: flush: %w", err))
	}
	produced, err := p.settled()
	if err != nil {
		return p.abortWith(ctx, fmt.Errorf("kafka: produce: %w", fenced(err)))
	}
	if produced == 0 {
		return p.abortWith(ctx, nil)
	}
	if err := p.commitPosition(ctx, pos); err != nil {
		return p.abortWith(ctx, err)
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("kafka: commit transaction: %w", fenced(err))
	}
	return nil
}

// Abort aborts the open transaction: none of its records becomes visible to read_committed
// readers.
func (p *TxnProducer) Abort(ctx context.Context) error {
	return p.abortWith(ctx, nil)
}

func (p *TxnProducer) abortWith(ctx context.Context, cause error) error {
	p.wg.Wait()
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return errors.Join(cause, fmt.Errorf("kafka: abort buffered records: %w", err))
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return errors.Join(cause, fmt.Errorf("kafka: abort transaction: %w", fenced(err)))
	}
	return cause
}

// commitPosition adds the group's offsets to the transaction (AddOffsetsToTxn, needed before
// transaction version 2, accepted after it) and writes pos as the offset of PositionTopic/0
// (TxnOffsetCommit). franz-go commits offsets in a transaction only for a consuming group
// member; the position here belongs to no member, so the two requests are made directly, with
// generation -1 and no member id: Kafka's "simple" group, as the Java producer's
// sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group)) does.
func (p *TxnProducer) commitPosition(ctx context.Context, pos Position) error {
	id, epoch, err := p.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("kafka: producer id: %w", fenced(err))
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = p.opts.TransactionalID, id, epoch, p.opts.Group
	addResp, err := add.RequestWith(ctx, p.cl)
	if err == nil {
		err = kerr.ErrorForCode(addResp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("kafka: add the offsets of group %s to the transaction: %w", p.opts.Group, fenced(err))
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = p.opts.TransactionalID, p.opts.Group, id, epoch
	req.Generation, req.MemberID = -1, ""
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic, t.TopicID = p.opts.PositionTopic, p.topicID
	part := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	part.Partition, part.Offset, part.Metadata = 0, pos.Next, &pos.Metadata
	t.Partitions = append(t.Partitions, part)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return fmt.Errorf("kafka: commit the position of group %s: %w", p.opts.Group, fenced(err))
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("kafka: commit the position of group %s: %w", p.opts.Group, fenced(err))
			}
		}
	}
	return nil
}

// fenced adds ErrFenced to the errors that mean a newer producer took the transactional id.
func fenced(err error) error {
	if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
		return fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return err
}
