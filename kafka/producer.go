package kafka

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer produces records asynchronously on a franz-go client and keeps the first failure:
// a caller producing a stream of records checks Err now and then to stop early, and Wait once at
// the end. A record's Value must not change until Wait returns.
type Producer struct {
	cl       *kgo.Client
	wg       sync.WaitGroup
	mu       sync.Mutex
	firstErr error
}

// NewProducer produces on cl (the caller's client: its brokers, TLS, SASL, partitioner).
func NewProducer(cl *kgo.Client) *Producer {
	return &Producer{cl: cl}
}

// Produce sends rec without waiting for its acknowledgement.
func (p *Producer) Produce(ctx context.Context, rec *kgo.Record) {
	p.wg.Add(1)
	p.cl.Produce(ctx, rec, p.done)
}

func (p *Producer) done(_ *kgo.Record, err error) {
	if err != nil {
		p.mu.Lock()
		if p.firstErr == nil {
			p.firstErr = err
		}
		p.mu.Unlock()
	}
	p.wg.Done()
}

// Err is the first failure acknowledged so far, nil when none.
func (p *Producer) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstErr
}

// Wait returns once every record produced is acknowledged, with the first failure.
func (p *Producer) Wait() error {
	p.wg.Wait()
	return p.Err()
}
