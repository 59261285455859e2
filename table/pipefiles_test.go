package table

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/txlog"
)

func pipeTestFiles(n int) []*txlog.Add {
	files := make([]*txlog.Add, n)
	for i := range files {
		files[i] = &txlog.Add{Path: fmt.Sprint(i)}
	}
	return files
}

// TestPipeFilesOverlaps: the decision for the next file is taken while the last one is
// written (write of file 0 waits for decide of file 1), and writes come in the files' order.
// The wait has a deadline only so that a serial pipeFiles fails instead of hanging.
func TestPipeFilesOverlaps(t *testing.T) {
	files := pipeTestFiles(5)
	second := make(chan struct{})
	var wrote []string
	err := pipeFiles(context.Background(), files, func(_ context.Context, f *txlog.Add) (decided, error) {
		if f.Path == "1" {
			close(second)
		}
		return decided{f: f, replace: true}, nil
	}, func(d decided) error {
		if d.f.Path == "0" {
			select {
			case <-second:
			case <-time.After(time.Minute):
				return errors.New("file 1 was not decided while file 0 was written")
			}
		}
		wrote = append(wrote, d.f.Path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(wrote) != "[0 1 2 3 4]" {
		t.Fatalf("wrote %v", wrote)
	}
}

// TestPipeFilesErrors: the first error of either side is returned; after a write fails the
// decider stops (at most the answer in the channel and the one it holds are decided on).
func TestPipeFilesErrors(t *testing.T) {
	files := pipeTestFiles(50)
	boom := errors.New("boom")
	decidedN := 0
	err := pipeFiles(context.Background(), files, func(_ context.Context, f *txlog.Add) (decided, error) {
		decidedN++
		return decided{f: f}, nil
	}, func(d decided) error {
		if d.f.Path == "3" {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || decidedN > 7 {
		t.Fatalf("write error: got %v after %d decisions", err, decidedN)
	}
	var wrote int
	err = pipeFiles(context.Background(), files, func(_ context.Context, f *txlog.Add) (decided, error) {
		if f.Path == "4" {
			return decided{}, boom
		}
		return decided{f: f}, nil
	}, func(decided) error { wrote++; return nil })
	if !errors.Is(err, boom) || wrote != 4 {
		t.Fatalf("decide error: got %v after %d writes", err, wrote)
	}
}
