package bronze

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// A batch is written as parts: contiguous runs of its inputs (landing objects in their listed
// order, or Kafka partitions in (topic, partition) order), each encoded into data files of its
// own and listed in the commit in part order. The cut depends on the inputs alone, never on
// the number of cores, so that the same batch becomes the same files holding the same rows on
// every machine: the stream reads bronze in commit order and counts files for its
// micro-batches, and with this its arrival order, batches and watermarks are the machine's
// no more (docs/arrival-order.md).

// DefaultPartBytes is the listed bytes from which a batch is cut into more than one part: a
// part below it costs a data file more than its encoding saves on another core.
const DefaultPartBytes = 1 << 20

// DefaultMaxParts bounds the parts (and so the data files) of one batch: enough to keep the
// cores of a large machine encoding, few enough that a batch stays a handful of files.
const DefaultMaxParts = 16

// defaultKafkaPartRecords is DefaultPartBytes for Kafka, whose ranges are known by their
// offsets: about a MiB of records of a few hundred bytes.
const defaultKafkaPartRecords = 4096

// cutParts cuts items of the given sizes, in order, into contiguous parts and returns their
// bounds: part p is items [bounds[p], bounds[p+1]). There are as many parts as the total holds
// partSize (rounded up), at most maxParts and at most one an item, at least one; each part ends
// at the first item that brings the running total to its share of the whole (p+1)/parts, so
// the parts hold about the same size, and no part is empty.
func cutParts(sizes []int64, partSize int64, maxParts int) []int {
	n := len(sizes)
	if n == 0 {
		return []int{0, 0}
	}
	var total int64
	for _, s := range sizes {
		total += max(s, 0)
	}
	parts := 1
	if partSize > 0 && total > partSize {
		parts = int(min(int64(maxParts), (total+partSize-1)/partSize))
	}
	parts = max(1, min(parts, n))
	bounds := make([]int, 1, parts+1)
	var sum int64
	for i, s := range sizes {
		if len(bounds) == parts {
			break
		}
		sum += max(s, 0)
		k := int64(len(bounds)) // the part being filled is k-1; its share ends at total*k/parts
		left := n - (i + 1)     // items after this one
		// A float compare: total*k overflows int64 for petabyte batches, and being off by a
		// byte at a share's edge changes nothing a reader relies on (the cut is still a
		// function of the sizes alone).
		if float64(sum)*float64(parts) >= float64(total)*float64(k) || left == parts-len(bounds) {
			bounds = append(bounds, i+1)
		}
	}
	return append(bounds, n)
}

// runParts calls part(ctx, w, p) for every p in [0, n), in order of p, on min(workers, n)
// goroutines; w (0 <= w < workers) names the goroutine, whose calls never overlap. The first
// error cancels the calls still running (they see ctx done) and none starts after it; the
// errors are returned joined.
func runParts(ctx context.Context, n, workers int, part func(ctx context.Context, w, p int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers = max(1, min(workers, n))
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				p := int(next.Add(1)) - 1
				if p >= n || ctx.Err() != nil {
					return
				}
				if err := part(ctx, w, p); err != nil {
					errs[w] = err
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// A cancellation from outside that stopped the parts early is not a batch written.
	return ctx.Err()
}
