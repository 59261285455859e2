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
	cl *kgo.Client
	acks
}

// acks follows the records a producer has in flight: how many were produced, and the first
// failure acknowledged.
type acks struct {
	wg       sync.WaitGroup
	mu       sync.Mutex
	firstErr error
	produced int
}

// sent counts a record handed to the client; done is its acknowledgement.
func (a *acks) sent() {
	a.wg.Add(1)
	a.mu.Lock()
	a.produced++
	a.mu.Unlock()
}

func (a *acks) done(_ *kgo.Record, err error) {
	if err != nil {
		a.mu.Lock()
		if a.firstErr == nil {
			a.firstErr = err
		}
		a.mu.Unlock()
	}
	a.wg.Done()
}

// Err is the first failure acknowledged so far, nil when none.
func (a *acks) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.firstErr
}

// settled waits for every record in flight and returns the records produced since the last
// reset and the first failure.
func (a *acks) settled() (int, error) {
	a.wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.produced, a.firstErr
}

func (a *acks) reset() {
	a.mu.Lock()
	a.firstErr, a.produced = nil, 0
	a.mu.Unlock()
}

// NewProducer produces on cl (the caller's client: its brokers, TLS, SASL, partitioner).
func NewProducer(cl *kgo.Client) *Producer {
	return &Producer{cl: cl}
}

// Produce sends rec without waiting for its acknowledgement.
func (p *Producer) Produce(ctx context.Context, rec *kgo.Record) {
	p.sent()
	p.cl.Produce(ctx, rec, p.done)
}

// Wait returns once every record produced is acknowledged, with the first failure.
func (p *Producer) Wait() error {
	_, err := p.settled()
	return err
}
