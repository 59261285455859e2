package pqtest

import (
	"math/rand/v2"
	"testing"
)

// TestRandomWriteOptionsFitAFile: whatever the draw, a layout never asks for more row groups
// than a Parquet file can hold (a 1M-row draw of 1 + IntN(5000) rows a group once did, and the
// interop differential failed writing its file instead of testing the readers).
func TestRandomWriteOptionsFitAFile(t *testing.T) {
	for _, rows := range []int{1, 7, 5000, 1_000_000, 10_000_000} {
		for seed := range uint64(2000) {
			o := RandomWriteOptions(rand.New(rand.NewPCG(seed, 1)), rows)
			if o.RowGroupRows < 1 {
				t.Fatalf("rows %d seed %d: %d rows a group", rows, seed, o.RowGroupRows)
			}
			if groups := (rows + o.RowGroupRows - 1) / o.RowGroupRows; groups > 32_767 {
				t.Fatalf("rows %d seed %d: %d rows a group makes %d row groups", rows, seed, o.RowGroupRows, groups)
			}
		}
	}
}
