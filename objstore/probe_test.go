package objstore_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// overwriting is a store that ignores the condition, as some S3 look-alikes do.
type overwriting struct{ objstore.Bucket }

func (o overwriting) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	return o.Put(ctx, key, r, size)
}

func TestProbePutIfAbsent(t *testing.T) {
	ctx := context.Background()
	good := mem.New()
	if err := objstore.ProbePutIfAbsent(ctx, good, "_delta_log/"); err != nil {
		t.Errorf("probe on mem = %v", err)
	}
	bad := overwriting{mem.New()}
	if err := objstore.ProbePutIfAbsent(ctx, bad, "_delta_log"); !errors.Is(err, objstore.ErrNotSupported) {
		t.Errorf("probe on an overwriting store = %v, want ErrNotSupported", err)
	}
	for name, b := range map[string]objstore.Bucket{"good": good, "bad": bad} {
		if infos, err := objstore.ListAll(ctx, b, "", objstore.ListOptions{}); err != nil || len(infos) != 0 {
			t.Errorf("%s: probe left %d objects (%v)", name, len(infos), err)
		}
	}
	broken := objstore.WithFaults(mem.New(), objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpPutIfAbsent, Nth: 1}}})
	if err := objstore.ProbePutIfAbsent(ctx, broken, ""); !errors.Is(err, objstore.ErrInjected) {
		t.Errorf("probe on a failing store = %v, want the failure", err)
	}
}
