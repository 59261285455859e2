package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// committedValues is every value a read_committed reader sees in topic, in partition and
// offset order.
func committedValues(t *testing.T, ctx context.Context, conn Conn, topic string) []string {
	t.Helper()
	if err := WaitStable(ctx, conn, topic, time.Minute); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := ReadCommitted(ctx, conn, topic, time.Minute, func(r *kgo.Record) error {
		got = append(got, string(r.Value))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestTxnProducer: a committed transaction's records and position are seen together; an
// aborted one's records are never seen by a read_committed reader and leave the position; a
// producer started with the same transactional id fences the older one, whose open transaction
// is aborted and whose commit fails with ErrFenced.
func TestTxnProducer(t *testing.T) {
	conn := testConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := fmt.Sprintf("kafka-txn-%d", time.Now().UnixNano())
	admin, err := conn.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	compact := "compact"
	if _, _, err := EnsureTopicWith(ctx, admin, topic, 2, map[string]*string{"cleanup.policy": &compact}); err != nil {
		t.Fatal(err)
	}
	if pol, err := TopicConfig(ctx, admin, topic, "cleanup.policy"); err != nil || pol != "compact" {
		t.Fatalf("cleanup.policy = %q, %v; want compact", pol, err)
	}
	opts := TxnOptions{TransactionalID: topic + "-txn", Group: topic + "-pos", PositionTopic: topic}
	p1, err := NewTxnProducer(ctx, conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	if _, ok, err := p1.Position(ctx); err != nil || ok {
		t.Fatalf("position of a new group: %v, %v; want none", ok, err)
	}
	produce := func(p *TxnProducer, prefix string, n int) {
		t.Helper()
		if err := p.Begin(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			p.Produce(ctx, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s%d", prefix, i)})
		}
	}
	produce(p1, "a", 4)
	if err := p1.Commit(ctx, Position{Next: 5, Metadata: `{"v":4}`}); err != nil {
		t.Fatal(err)
	}
	wantPos := func(p *TxnProducer, next int64, meta string) {
		t.Helper()
		pos, ok, err := p.Position(ctx)
		if err != nil || !ok || pos.Next != next || pos.Metadata != meta {
			t.Fatalf("position = %+v, %v, %v; want {%d %s}", pos, ok, err, next, meta)
		}
	}
	wantPos(p1, 5, `{"v":4}`)

	produce(p1, "x", 4)
	if err := p1.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	wantPos(p1, 5, `{"v":4}`)

	// p1 opens a transaction and is replaced before committing it.
	produce(p1, "y", 4)
	if err := p1.cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p2, err := NewTxnProducer(ctx, conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if err := p1.Commit(ctx, Position{Next: 99}); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit of a fenced producer: %v, want ErrFenced", err)
	}
	wantPos(p2, 5, `{"v":4}`)
	produce(p2, "b", 2)
	if err := p2.Commit(ctx, Position{Next: 7, Metadata: `{"v":6}`}); err != nil {
		t.Fatal(err)
	}
	wantPos(p2, 7, `{"v":6}`)
	// An empty transaction commits nothing.
	produce(p2, "", 0)
	if err := p2.Commit(ctx, Position{Next: 8}); err != nil {
		t.Fatal(err)
	}
	wantPos(p2, 7, `{"v":6}`)

	got := committedValues(t, ctx, conn, topic)
	var want []string
	for _, v := range got {
		if strings.HasPrefix(v, "x") || strings.HasPrefix(v, "y") {
			t.Errorf("a read_committed reader sees %q of an aborted transaction", v)
		}
	}
	want = []string{"a0", "a1", "a2", "a3", "b0", "b1"}
	if len(got) != len(want) {
		t.Errorf("committed values %v, want those of %v", got, want)
	}
	seen := map[string]bool{}
	for _, v := range got {
		seen[v] = true
	}
	for _, v := range want {
		if !seen[v] {
			t.Errorf("committed values %v lack %s", got, v)
		}
	}
}
