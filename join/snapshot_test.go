package join

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func mustSnapshot(t *testing.T, op *Operator) []byte {
	t.Helper()
	b, err := op.AppendSnapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRestoreContinuesExactly splits random batch sequences at every point: an operator
// restored there, from the snapshot or from an older snapshot plus the deltas since, goes on
// byte for byte like the one that never stopped (same rows in the same order, same late rows
// and metrics, same snapshots after every later batch).
func TestRestoreContinuesExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 18))
	for round := 0; round < randomRounds(t, 60); round++ {
		w := randomWorkload(rng)
		op, err := New(w.spec)
		if err != nil {
			t.Fatal(err)
		}
		steps := drive(t, w, op)
		// Replay the same batches on a fresh operator, keeping each state and delta.
		ref, _ := New(w.spec)
		snaps := [][]byte{mustSnapshot(t, ref)}
		var deltas [][]byte
		for i, s := range steps {
			res, err := ref.ProcessBatch(s.left, s.right, s.late, s.evict)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeResult(res); got != s.out {
				t.Fatalf("round %d batch %d: a second run differs:\n%s\nvs\n%s", round, i, got, s.out)
			}
			d, err := ref.AppendDelta(nil)
			if err != nil {
				t.Fatal(err)
			}
			deltas = append(deltas, d)
			snaps = append(snaps, mustSnapshot(t, ref))
		}
		for k := 0; k <= len(steps); k++ {
			for _, from := range []int{k, k / 2, 0} {
				op, err := Restore(w.spec, snaps[from])
				if err != nil {
					t.Fatalf("round %d: restore at %d: %v", round, from, err)
				}
				for j := from; j < k; j++ {
					if err := op.ApplyDelta(deltas[j]); err != nil {
						t.Fatalf("round %d: delta %d: %v", round, j, err)
					}
				}
				if got := mustSnapshot(t, op); !bytes.Equal(got, snaps[k]) {
					t.Fatalf("round %d: snapshot %d + deltas to %d differs from snapshot %d", round, from, k, k)
				}
				for j := k; j < len(steps); j++ {
					s := steps[j]
					res, err := op.ProcessBatch(s.left, s.right, s.late, s.evict)
					if err != nil {
						t.Fatal(err)
					}
					if got := encodeResult(res); got != s.out {
						t.Fatalf("round %d: restored at %d (from %d), batch %d differs:\n%s\nwant\n%s", round, k, from, j, got, s.out)
					}
					if got := mustSnapshot(t, op); !bytes.Equal(got, snaps[j+1]) {
						t.Fatalf("round %d: restored at %d (from %d), snapshot after batch %d differs", round, k, from, j)
					}
				}
			}
		}
	}
}

// TestSnapshotRejectsDamage: a flipped byte, a truncation, another join's spec or a delta
// passed as a snapshot fail with ErrBadState, never a panic or a silently different state.
func TestSnapshotRejectsDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var w workload
	for len(w.batches) < 3 {
		w = randomWorkload(rng)
	}
	op, _ := New(w.spec)
	drive(t, w, op)
	snap := mustSnapshot(t, op)
	delta, _ := op.AppendDelta(nil)
	for i := range snap {
		b := bytes.Clone(snap)
		b[i] ^= 0x20
		if _, err := Restore(w.spec, b); !errors.Is(err, ErrBadState) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	for n := 0; n < len(snap); n++ {
		if _, err := Restore(w.spec, snap[:n]); !errors.Is(err, ErrBadState) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	other := w.spec
	other.Condition = append([]Bound{{Op: LE, Offset: 1}}, other.Condition...)
	if _, err := Restore(other, snap); !errors.Is(err, ErrBadState) {
		t.Fatalf("other spec: %v", err)
	}
	if _, err := Restore(w.spec, delta); !errors.Is(err, ErrBadState) {
		t.Fatalf("delta as snapshot: %v", err)
	}
	if err := op.ApplyDelta(snap); !errors.Is(err, ErrBadState) {
		t.Fatalf("snapshot as delta: %v", err)
	}
}

// FuzzRestore feeds arbitrary bytes (seeded with real snapshots and deltas) to Restore and
// ApplyDelta: an error or a state that snapshots again, never a panic.
func FuzzRestore(f *testing.F) {
	spec := Spec{Type: FullOuter, NumKeys: 1, Condition: Between(-5_000_000, 5_000_000), LeftWatermark: true, RightWatermark: true}
	op, _ := New(spec)
	l, r := inputsOf([]event{{side: Left, id: 1, key: 1, t: 10_000_000}, {side: Right, id: 2, key: 1, t: 12_000_000}, {side: Left, id: 3, key: -1, t: 1}})
	if _, err := op.ProcessBatch(l, r, 0, 0); err != nil {
		f.Fatal(err)
	}
	snap, _ := op.AppendSnapshot(nil)
	delta, _ := op.AppendDelta(nil)
	f.Add(snap)
	f.Add(delta)
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, err := Restore(spec, b); err == nil {
			if _, err := o.AppendSnapshot(nil); err != nil {
				t.Fatal(err)
			}
		}
		o, _ := New(spec)
		_ = o.ApplyDelta(b)
	})
}
