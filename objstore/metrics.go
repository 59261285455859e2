package objstore

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Operation names, used as metric labels and to aim injected faults.
const (
	OpGet         = "get"
	OpGetRange    = "get_range"
	OpPut         = "put"
	OpPutIfAbsent = "put_if_absent"
	OpList        = "list"
	OpDelete      = "delete"
	OpStat        = "stat"
)

type bucketMetrics struct {
	ops      *prometheus.CounterVec
	failures *prometheus.CounterVec
	duration *prometheus.HistogramVec
	bytes    *prometheus.CounterVec
}

// metered records every call on the wrapped bucket.
type metered struct {
	b Bucket
	m *bucketMetrics
}

// WithMetrics returns b recording, per operation and labelled bucket=name:
// objstore_bucket_operations_total, objstore_bucket_operation_failures_total,
// objstore_bucket_operation_duration_seconds and objstore_bucket_operation_transferred_bytes_total
// (bytes read by get/get_range, written by put/put_if_absent).
//
// ErrNotFound and ErrAlreadyExists are answers, not failures: they do not count as failures.
// Reads are timed until the body is closed. Wrapping twice with the same name and registerer
// shares the collectors; a nil registerer keeps the metrics unregistered.
func WithMetrics(b Bucket, reg prometheus.Registerer, name string) Bucket {
	labels := []string{"operation"}
	m := &bucketMetrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "objstore_bucket_operations_total",
			Help: "Bucket operations started.",
		}, labels),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "objstore_bucket_operation_failures_total",
			Help: "Bucket operations that failed (not counting not-found and already-exists answers).",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "objstore_bucket_operation_duration_seconds",
			Help:    "Duration of bucket operations; reads until the body is closed.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120},
		}, labels),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "objstore_bucket_operation_transferred_bytes_total",
			Help: "Object bytes read or written.",
		}, labels),
	}
	if reg != nil {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"bucket": name}, reg)
		m.ops = register(reg, m.ops)
		m.failures = register(reg, m.failures)
		m.duration = register(reg, m.duration)
		m.bytes = register(reg, m.bytes)
	}
	return &metered{b: b, m: m}
}

// register returns the collector already registered under the same description, so two
// wrappers of one bucket name add to the same series instead of failing.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}

func (m *metered) done(op string, start time.Time, err error) {
	m.m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAlreadyExists) {
		m.m.failures.WithLabelValues(op).Inc()
	}
}

// countingReader counts bytes and reports the operation when closed.
type countingReader struct {
	rc    io.ReadCloser
	m     *metered
	op    string
	start time.Time
	n     int64
	err   error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

func (c *countingReader) Close() error {
	err := c.rc.Close()
	c.m.m.bytes.WithLabelValues(c.op).Add(float64(c.n))
	if c.err == nil {
		c.err = err
	}
	c.m.done(c.op, c.start, c.err)
	return err
}

func (m *metered) read(op string, open func() (io.ReadCloser, error)) (io.ReadCloser, error) {
	m.m.ops.WithLabelValues(op).Inc()
	start := time.Now()
	rc, err := open()
	if err != nil {
		m.done(op, start, err)
		return nil, err
	}
	return &countingReader{rc: rc, m: m, op: op, start: start}, nil
}

func (m *metered) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return m.read(OpGet, func() (io.ReadCloser, error) { return m.b.Get(ctx, key) })
}

func (m *metered) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	return m.read(OpGetRange, func() (io.ReadCloser, error) { return m.b.GetRange(ctx, key, offset, length) })
}

// byteCounter counts what the backend consumed from the caller's reader.
type byteCounter struct {
	r io.Reader
	n int64
}

func (c *byteCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (m *metered) write(op string, r io.Reader, put func(io.Reader) error) error {
	m.m.ops.WithLabelValues(op).Inc()
	start := time.Now()
	c := &byteCounter{r: r}
	err := put(c)
	if err == nil {
		m.m.bytes.WithLabelValues(op).Add(float64(c.n))
	}
	m.done(op, start, err)
	return err
}

func (m *metered) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return m.write(OpPut, r, func(r io.Reader) error { return m.b.Put(ctx, key, r, size) })
}

func (m *metered) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	return m.write(OpPutIfAbsent, r, func(r io.Reader) error { return m.b.PutIfAbsent(ctx, key, r, size) })
}

func (m *metered) Delete(ctx context.Context, key string) error {
	m.m.ops.WithLabelValues(OpDelete).Inc()
	start := time.Now()
	err := m.b.Delete(ctx, key)
	m.done(OpDelete, start, err)
	return err
}

func (m *metered) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	m.m.ops.WithLabelValues(OpStat).Inc()
	start := time.Now()
	info, err := m.b.Stat(ctx, key)
	m.done(OpStat, start, err)
	return info, err
}

func (m *metered) List(ctx context.Context, prefix string, opts ListOptions) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		m.m.ops.WithLabelValues(OpList).Inc()
		start := time.Now()
		var failed error
		for info, err := range m.b.List(ctx, prefix, opts) {
			if err != nil {
				failed = err
			}
			if !yield(info, err) || err != nil {
				break
			}
		}
		m.done(OpList, start, failed)
	}
}

// Close closes the wrapped bucket.
func (m *metered) Close() error { return m.b.Close() }
