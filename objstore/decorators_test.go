package objstore_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/objstoretest"
)

func TestAcceptanceDecorated(t *testing.T) {
	backends := map[string]func(t *testing.T) objstore.Bucket{
		"prefix/mem": func(*testing.T) objstore.Bucket { return objstore.WithPrefix(mem.New(), "tables/events") },
		"prefix/file": func(t *testing.T) objstore.Bucket {
			b, err := file.New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return objstore.WithPrefix(objstore.WithPrefix(b, "lake/"), "tables/events/")
		},
		"metrics/mem": func(*testing.T) objstore.Bucket {
			return objstore.WithMetrics(mem.New(), prometheus.NewRegistry(), "test")
		},
		"faults-never-firing/mem": func(*testing.T) objstore.Bucket {
			return objstore.WithFaults(mem.New(), objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpPut, Nth: 1 << 30}}})
		},
	}
	for name, newBucket := range backends {
		t.Run(name, func(t *testing.T) {
			objstoretest.RunBucketTests(t, objstoretest.Config{New: newBucket})
		})
	}
}

func keys(t *testing.T, b objstore.Bucket, prefix string) []string {
	t.Helper()
	infos, err := objstore.ListAll(context.Background(), b, prefix, objstore.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, info := range infos {
		out = append(out, info.Key)
	}
	return out
}

func TestWithPrefixIsolation(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	for _, k := range []string{"tables/events/a", "tables/events/b/c", "tables/eventsX/a", "tables/event", "other"} {
		if err := objstore.PutBytes(ctx, inner, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, prefix := range []string{"tables/events", "tables/events/"} {
		b := objstore.WithPrefix(inner, prefix)
		if got, want := keys(t, b, ""), []string{"a", "b/c"}; !slices.Equal(got, want) {
			t.Errorf("WithPrefix(%q) lists %q, want %q", prefix, got, want)
		}
		data, err := objstore.ReadAll(ctx, b, "b/c")
		if err != nil || string(data) != "tables/events/b/c" {
			t.Errorf("Get(b/c) = %q, %v", data, err)
		}
		info, err := b.Stat(ctx, "a")
		if err != nil || info.Key != "a" {
			t.Errorf("Stat(a) = %+v, %v; want key a", info, err)
		}
		infos, err := objstore.ListAll(ctx, b, "", objstore.ListOptions{StartAfter: "a"})
		if err != nil || len(infos) != 1 || infos[0].Key != "b/c" {
			t.Errorf("List StartAfter a = %+v, %v", infos, err)
		}
	}
	if err := objstore.PutBytes(ctx, objstore.WithPrefix(inner, "tables/events"), "new", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Stat(ctx, "tables/events/new"); err != nil {
		t.Errorf("write through the prefix did not land under it: %v", err)
	}
	for _, bad := range []string{"/abs", "../up", "a//b"} {
		b := objstore.WithPrefix(inner, bad)
		if _, err := b.Get(ctx, "x"); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("WithPrefix(%q).Get = %v, want ErrInvalidKey", bad, err)
		}
		if _, err := objstore.ListAll(ctx, b, "", objstore.ListOptions{}); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("WithPrefix(%q).List = %v, want ErrInvalidKey", bad, err)
		}
	}
}

// metricValue reads one series from a registry, so assertions use Prometheus' own view.
func metricValue(t *testing.T, reg *prometheus.Registry, name, op string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] != op || labels["bucket"] != "lake" {
				continue
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func TestWithMetrics(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	b := objstore.WithMetrics(mem.New(), reg, "lake")
	if err := objstore.PutBytes(ctx, b, "k", make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytesIfAbsent(ctx, b, "k", []byte("x")); !errors.Is(err, objstore.ErrAlreadyExists) {
		t.Fatal(err)
	}
	rc, err := b.GetRange(ctx, "k", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(rc)
	rc.Close()
	if _, err := b.Stat(ctx, "missing"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "../bad"); err == nil {
		t.Fatal("want an error")
	}
	_, _ = objstore.ListAll(ctx, b, "", objstore.ListOptions{})
	// A second wrapper with the same name shares the series instead of failing to register.
	b2 := objstore.WithMetrics(mem.New(), reg, "lake")
	_ = objstore.PutBytes(ctx, b2, "j", make([]byte, 24))

	tests := []struct {
		metric, op string
		want       float64
	}{
		{"objstore_bucket_operations_total", objstore.OpPut, 2},
		{"objstore_bucket_operations_total", objstore.OpPutIfAbsent, 1},
		{"objstore_bucket_operations_total", objstore.OpGetRange, 1},
		{"objstore_bucket_operations_total", objstore.OpGet, 1},
		{"objstore_bucket_operations_total", objstore.OpStat, 1},
		{"objstore_bucket_operations_total", objstore.OpList, 1},
		{"objstore_bucket_operation_failures_total", objstore.OpPutIfAbsent, 0}, // lost race: an answer
		{"objstore_bucket_operation_failures_total", objstore.OpStat, 0},        // not found: an answer
		{"objstore_bucket_operation_failures_total", objstore.OpGet, 1},         // invalid key: a failure
		{"objstore_bucket_operation_transferred_bytes_total", objstore.OpPut, 1024},
		{"objstore_bucket_operation_transferred_bytes_total", objstore.OpGetRange, 10},
		{"objstore_bucket_operation_duration_seconds", objstore.OpGetRange, 1},
		{"objstore_bucket_operation_duration_seconds", objstore.OpPut, 2},
	}
	for _, tc := range tests {
		if got := metricValue(t, reg, tc.metric, tc.op); got != tc.want {
			t.Errorf("%s{operation=%q} = %v, want %v", tc.metric, tc.op, got, tc.want)
		}
	}
}

func TestWithFaultsNth(t *testing.T) {
	ctx := context.Background()
	b := objstore.WithFaults(mem.New(), objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpPut, Nth: 2}}})
	var errs []error
	for range 3 {
		errs = append(errs, objstore.PutBytes(ctx, b, "k", []byte("v")))
	}
	if errs[0] != nil || !errors.Is(errs[1], objstore.ErrInjected) || errs[2] != nil {
		t.Errorf("errors of puts 1..3 = %v, want only the 2nd injected", errs)
	}
	if b.Fired() != 1 {
		t.Errorf("Fired = %d, want 1", b.Fired())
	}
	// Other operations are not counted by a Put rule.
	if _, err := b.Stat(ctx, "k"); err != nil {
		t.Errorf("Stat: %v", err)
	}
}

func TestWithFaultsAfterWriteIsUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	timeout := errors.New("simulated timeout")
	b := objstore.WithFaults(inner, objstore.FaultPlan{Faults: []objstore.Fault{
		{Op: objstore.OpPutIfAbsent, KeyPrefix: "_delta_log/", Nth: 1, Err: timeout, After: true},
	}})
	err := objstore.PutBytesIfAbsent(ctx, b, "_delta_log/00000000000000000001.json", []byte("commit"))
	if !errors.Is(err, timeout) {
		t.Fatalf("PutIfAbsent = %v, want the injected timeout", err)
	}
	data, err := objstore.ReadAll(ctx, inner, "_delta_log/00000000000000000001.json")
	if err != nil || string(data) != "commit" {
		t.Fatalf("the write behind the error did not happen: %q, %v", data, err)
	}
	// A rule limited to a key prefix leaves the other keys alone.
	if err := objstore.PutBytesIfAbsent(ctx, b, "part-0.parquet", []byte("x")); err != nil {
		t.Errorf("PutIfAbsent outside the prefix: %v", err)
	}
}

func TestWithFaultsRateIsSeeded(t *testing.T) {
	run := func(seed uint64) []bool {
		b := objstore.WithFaults(mem.New(), objstore.FaultPlan{Seed: seed, Faults: []objstore.Fault{{Op: objstore.OpStat, Rate: 0.25}}})
		var failed []bool
		for range 400 {
			_, err := b.Stat(context.Background(), "k")
			failed = append(failed, errors.Is(err, objstore.ErrInjected))
		}
		return failed
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave different fault sequences")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds gave the same fault sequence")
	}
	n := 0
	for _, f := range a {
		if f {
			n++
		}
	}
	// 400 draws at p = 0.25: mean 100, sd ~8.7; 60..140 is more than 4 sd either side.
	if n < 60 || n > 140 {
		t.Errorf("%d of 400 calls failed at rate 0.25", n)
	}
}

func TestWithFaultsDelay(t *testing.T) {
	b := objstore.WithFaults(mem.New(), objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpGet, Nth: 1, Delay: time.Hour}}})
	_ = objstore.PutBytes(context.Background(), b, "k", []byte("v"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delayed Get = %v, want the context deadline", err)
	}
	// The second call is not delayed; a delay-only rule does not fail the call.
	slow := objstore.WithFaults(mem.New(), objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpPut, Nth: 1, Delay: time.Millisecond}}})
	if err := objstore.PutBytes(context.Background(), slow, "k", []byte("v")); err != nil {
		t.Errorf("delay-only fault failed the call: %v", err)
	}
}

func TestWithFaultsList(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	for _, k := range []string{"a", "b"} {
		_ = objstore.PutBytes(ctx, inner, k, nil)
	}
	b := objstore.WithFaults(inner, objstore.FaultPlan{Faults: []objstore.Fault{
		{Op: objstore.OpList, Nth: 1},
		{Op: objstore.OpList, Nth: 2, After: true},
	}})
	infos, err := objstore.ListAll(ctx, b, "", objstore.ListOptions{})
	if len(infos) != 0 || !errors.Is(err, objstore.ErrInjected) {
		t.Errorf("first List = %d items, %v; want none and the fault", len(infos), err)
	}
	infos, err = objstore.ListAll(ctx, b, "", objstore.ListOptions{})
	if len(infos) != 2 || !errors.Is(err, objstore.ErrInjected) {
		t.Errorf("second List = %d items, %v; want all and then the fault", len(infos), err)
	}
}
