package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// Deletion-vector decoding (table/dv.go) at the format's boundaries: array vs bitmap
// containers at 4096 values, full containers, run containers at the ends of the key space,
// the 4-container threshold of the offset header, empty bitmaps, 64-bit high keys. The
// encoder below follows the portable Roaring spec (RoaringFormatSpec) and Delta's
// RoaringBitmapArray layout independently of the decoder; the oracle is the value set.

type dvContainer int

const (
	dvAuto dvContainer = iota
	dvArray
	dvBitmap
	dvRun
)

// dvEncode32 serializes sorted unique values in the portable 32-bit Roaring format. force
// chooses the container type of a given 16-bit key (dvAuto: array up to 4096 values, else
// bitmap).
func dvEncode32(vals []uint32, force map[uint16]dvContainer) []byte {
	type cont struct {
		key  uint16
		vals []uint16
		kind dvContainer
	}
	var cs []cont
	for _, v := range vals {
		k := uint16(v >> 16)
		if len(cs) == 0 || cs[len(cs)-1].key != k {
			cs = append(cs, cont{key: k})
		}
		cs[len(cs)-1].vals = append(cs[len(cs)-1].vals, uint16(v))
	}
	hasRun := false
	for i := range cs {
		c := &cs[i]
		c.kind = force[c.key]
		if c.kind == dvAuto {
			c.kind = dvArray
			if len(c.vals) > 4096 {
				c.kind = dvBitmap
			}
		}
		hasRun = hasRun || c.kind == dvRun
	}
	le16 := func(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
	le32 := func(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
	n := len(cs)
	var head []byte
	withOffsets := true
	if hasRun {
		head = le32(head, 12347|uint32(n-1)<<16)
		runBits := make([]byte, (n+7)/8)
		for i, c := range cs {
			if c.kind == dvRun {
				runBits[i/8] |= 1 << (i % 8)
			}
		}
		head = append(head, runBits...)
		withOffsets = n >= 4
	} else {
		head = le32(head, 12346)
		head = le32(head, uint32(n))
	}
	for _, c := range cs {
		head = le16(head, c.key)
		head = le16(head, uint16(len(c.vals)-1))
	}
	var bodies [][]byte
	for _, c := range cs {
		var b []byte
		switch c.kind {
		case dvArray:
			for _, v := range c.vals {
				b = le16(b, v)
			}
		case dvBitmap:
			words := make([]uint64, 1024)
			for _, v := range c.vals {
				words[v/64] |= 1 << (v % 64)
			}
			for _, w := range words {
				b = binary.LittleEndian.AppendUint64(b, w)
			}
		case dvRun:
			var runs [][2]uint16
			for i := 0; i < len(c.vals); {
				j := i
				for j+1 < len(c.vals) && c.vals[j+1] == c.vals[j]+1 {
					j++
				}
				runs = append(runs, [2]uint16{c.vals[i], c.vals[j] - c.vals[i]})
				i = j + 1
			}
			b = le16(b, uint16(len(runs)))
			for _, r := range runs {
				b = le16(le16(b, r[0]), r[1])
			}
		}
		bodies = append(bodies, b)
	}
	out := head
	if withOffsets {
		off := len(head) + 4*n
		for _, b := range bodies {
			out = le32(out, uint32(off))
			off += len(b)
		}
	}
	for _, b := range bodies {
		out = append(out, b...)
	}
	return out
}

// dvEncodeArray serializes Delta's RoaringBitmapArray of sorted unique 64-bit values; empty
// lists the high keys to emit as bitmaps of no containers.
func dvEncodeArray(vals []uint64, force map[uint16]dvContainer, empty ...uint32) []byte {
	groups := map[uint32][]uint32{}
	var highs []uint32
	for _, v := range vals {
		h := uint32(v >> 32)
		if _, ok := groups[h]; !ok {
			highs = append(highs, h)
		}
		groups[h] = append(groups[h], uint32(v))
	}
	for _, h := range empty {
		if _, ok := groups[h]; !ok {
			highs = append(highs, h)
			groups[h] = nil
		}
	}
	slices.Sort(highs)
	out := binary.LittleEndian.AppendUint32(nil, dvMagic)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(highs)))
	for _, h := range highs {
		out = binary.LittleEndian.AppendUint32(out, h)
		out = append(out, dvEncode32(groups[h], force)...)
	}
	return out
}

func dvRange(lo, hi uint64) []uint64 { // [lo, hi]
	var out []uint64
	for v := lo; v <= hi; v++ {
		out = append(out, v)
	}
	return out
}

func TestDecodersRoaringBoundaries(t *testing.T) {
	every := func(base uint64, n, step int) []uint64 {
		var out []uint64
		for i := 0; i < n; i++ {
			out = append(out, base+uint64(i*step))
		}
		return out
	}
	cases := []struct {
		name  string
		vals  []uint64
		force map[uint16]dvContainer
		empty []uint32
	}{
		{name: "no bitmaps"},
		{name: "one bitmap of no containers", empty: []uint32{0}},
		{name: "empty bitmaps around a full one", vals: []uint64{1 << 32, 1<<32 | 7}, empty: []uint32{0, 2, 0xffffffff}},
		{name: "array of exactly 4096", vals: every(0, 4096, 16)},
		{name: "bitmap of exactly 4097", vals: every(0, 4097, 15)},
		{name: "4095 and 4096 and 4097 in three containers", vals: slices.Concat(every(0, 4095, 16), every(1<<16, 4096, 16), every(2<<16, 4097, 15))},
		{name: "full bitmap container", vals: dvRange(3<<16, 3<<16|0xffff)},
		{name: "bitmap with first and last bit", vals: slices.Concat([]uint64{0}, every(1, 4096, 7), []uint64{0xffff})},
		{name: "full run container", vals: dvRange(0, 0xffff), force: map[uint16]dvContainer{0: dvRun}},
		{name: "run at the very end of the key space", vals: []uint64{0xffffffff_fffffffe, 0xffffffff_ffffffff}, force: map[uint16]dvContainer{0xffff: dvRun}},
		{name: "single-value runs", vals: []uint64{0, 2, 4, 65535}, force: map[uint16]dvContainer{0: dvRun}},
		{name: "array container of one value at 65535", vals: []uint64{0xffff}},
		{name: "run cookie, 3 containers (no offsets)", vals: []uint64{1, 1<<16 | 1, 2<<16 | 5, 2<<16 | 6}, force: map[uint16]dvContainer{2: dvRun}},
		{name: "run cookie, 4 containers (offsets)", vals: []uint64{1, 1<<16 | 1, 2<<16 | 5, 2<<16 | 6, 9<<16 | 3}, force: map[uint16]dvContainer{2: dvRun}},
		{name: "run cookie, 5 containers with a bitmap", vals: slices.Concat([]uint64{1}, every(1<<16, 5000, 13), []uint64{2<<16 | 5, 2<<16 | 6, 9<<16 | 3, 0xffff << 16}), force: map[uint16]dvContainer{2: dvRun, 0xffff: dvRun}},
		{name: "no-run cookie with many containers", vals: every(0, 300, 1<<16|3)},
		{name: "64-bit high keys", vals: []uint64{5, 1<<32 | 5, 1<<33 | 0xffff_ffff, 0x7fffffff_00000000, 0xffffffff_00010000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			blob := dvEncodeArray(c.vals, c.force, c.empty...)
			got, err := DecodeRoaringArray(blob)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.vals) || !slices.Equal(got, c.vals) && !(len(got) == 0 && len(c.vals) == 0) {
				t.Fatalf("decoded %d values, want %d (first diff %s)", len(got), len(c.vals), firstDiff(got, c.vals))
			}
		})
	}
}

func firstDiff(a, b []uint64) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: %#x vs %#x", i, a[i], b[i])
		}
	}
	return "in length"
}

// TestDecodersRoaringRandom: random sets of every density over a few high keys, every
// container type chosen at random where legal.
func TestDecodersRoaringRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(25))
	// 80 bitmaps under -race (a decoder on one goroutine: the detector watches nothing here, it
	// only slows each iteration); every container kind is drawn in the first few dozen.
	for it := 0; it < testshared.Sized(200, 80); it++ {
		set := map[uint64]bool{}
		force := map[uint16]dvContainer{}
		for g := rng.Intn(4); g >= 0; g-- {
			high := uint64(rng.Intn(3)) << 32
			if rng.Intn(5) == 0 {
				high = 0xffffffff << 32
			}
			key := uint64(rng.Intn(1 << 16))
			base := high | key<<16
			switch rng.Intn(4) {
			case 0:
				for k := rng.Intn(10); k >= 0; k-- {
					set[base|uint64(rng.Intn(1<<16))] = true
				}
			case 1:
				n := 4000 + rng.Intn(200) // around the array/bitmap boundary
				for len(set) < 1e6 && n > 0 {
					v := base | uint64(rng.Intn(1<<16))
					if !set[v] {
						set[v] = true
						n--
					}
				}
			case 2:
				lo := rng.Intn(1 << 16)
				hi := min(1<<16-1, lo+rng.Intn(1<<14))
				for v := lo; v <= hi; v++ {
					set[base|uint64(v)] = true
				}
				force[uint16(key)] = dvRun
			case 3:
				for v := 0; v < 1<<16; v += 1 + rng.Intn(20) {
					set[base|uint64(v)] = true
				}
			}
		}
		var vals []uint64
		for v := range set {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		blob := dvEncodeArray(vals, force)
		got, err := DecodeRoaringArray(blob)
		if err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		if !slices.Equal(got, vals) {
			t.Fatalf("iteration %d: decoded %d values, want %d (%s)", it, len(got), len(vals), firstDiff(got, vals))
		}
	}
}

// TestDecodersDeletionVectorStorage: inline DVs whose size is and is not a multiple of 4 (no
// Z85 padding), an empty DV, and two DVs stored back to back in one file at their offsets.
func TestDecodersDeletionVectorStorage(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	sets := [][]uint64{
		nil,
		{0},
		{3, 4, 1 << 32},
		dvRange(10, 5000),
	}
	id := uuid.New()
	file := []byte{1}
	var dvs []*txlog.DeletionVector
	for i, vals := range sets {
		blob := dvEncodeArray(vals, map[uint16]dvContainer{0: dvRun})
		off := int32(len(file))
		file = binary.BigEndian.AppendUint32(file, uint32(len(blob)))
		file = append(file, blob...)
		file = binary.BigEndian.AppendUint32(file, crc32.ChecksumIEEE(blob))
		dvs = append(dvs, &txlog.DeletionVector{StorageType: "u", PathOrInlineDv: "xy" + z85Encode(id[:]), Offset: &off,
			SizeInBytes: int32(len(blob)), Cardinality: int64(len(vals))})
		// Inline, padded only as much as Z85 needs.
		padded := append(append([]byte{}, blob...), make([]byte, (4-len(blob)%4)%4)...)
		inline := &txlog.DeletionVector{StorageType: "i", PathOrInlineDv: z85Encode(padded), SizeInBytes: int32(len(blob)), Cardinality: int64(len(vals))}
		got, err := LoadDeletionVector(ctx, b, inline)
		if err != nil {
			t.Fatalf("inline %d (%d bytes): %v", i, len(blob), err)
		}
		if len(got) != len(vals) || (len(vals) > 0 && !slices.Equal(got, vals)) {
			t.Fatalf("inline %d: %d values, want %d", i, len(got), len(vals))
		}
	}
	if err := objstore.PutBytes(ctx, b, "xy/deletion_vector_"+id.String()+".bin", file); err != nil {
		t.Fatal(err)
	}
	for i, dv := range dvs {
		got, err := LoadDeletionVector(ctx, b, dv)
		if err != nil {
			t.Fatalf("on-disk %d at %d: %v", i, *dv.Offset, err)
		}
		if len(got) != len(sets[i]) || (len(got) > 0 && !slices.Equal(got, sets[i])) {
			t.Fatalf("on-disk %d: %d values, want %d", i, len(got), len(sets[i]))
		}
	}
}

// TestDecodersDeletionVectorRowGroupBoundaries applies a DV that deletes the first and last
// row of every row group (and rows of a row group wholly deleted) to a file of several row
// groups: a DV's row indexes count from the file's first row, across row groups.
func TestDecodersDeletionVectorRowGroupBoundaries(t *testing.T) {
	ctx := context.Background()
	schema := pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}`)
	const rows, rg = 1000, 100
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < rows; r++ {
		b.Columns[0].AppendInt64(int64(r))
	}
	data, _, err := pq.EncodeFile(schema, []*pq.Batch{b}, pq.WriteOptions{RowGroupRows: rg})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data))); err != nil || len(f.RowGroups()) != rows/rg {
		t.Fatalf("the file must have %d row groups: %v", rows/rg, err)
	}
	bucket := mem.New()
	if err := objstore.PutBytes(ctx, bucket, "f.parquet", data); err != nil {
		t.Fatal(err)
	}
	del := map[uint64]bool{}
	for g := 0; g < rows/rg; g++ {
		del[uint64(g*rg)] = true
		del[uint64(g*rg+rg-1)] = true
	}
	for r := 300; r < 400; r++ { // row group 3 entirely
		del[uint64(r)] = true
	}
	var vals []uint64
	for v := range del {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	blob := dvEncodeArray(vals, nil)
	padded := append(append([]byte{}, blob...), make([]byte, (4-len(blob)%4)%4)...)
	add := &txlog.Add{Path: "f.parquet", Size: int64(len(data)), DeletionVector: &txlog.DeletionVector{
		StorageType: "i", PathOrInlineDv: z85Encode(padded), SizeInBytes: int32(len(blob)), Cardinality: int64(len(vals))}}
	for _, cols := range [][]string{nil, {"id"}} {
		fs := &FileScan{Bucket: bucket, Schema: schema, Columns: cols}
		var got []int64
		for out, err := range fs.Read(ctx, []*txlog.Add{add}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, out.Columns[0].Int64...)
		}
		var want []int64
		for r := 0; r < rows; r++ {
			if !del[uint64(r)] {
				want = append(want, int64(r))
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("columns %v: %d rows, want %d", cols, len(got), len(want))
		}
	}
}
