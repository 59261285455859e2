package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/txlog"
)

// z85Encode is the test's own encoder (the oracle for DecodeZ85).
func z85Encode(b []byte) string {
	var out []byte
	for i := 0; i < len(b); i += 4 {
		v := binary.BigEndian.Uint32(b[i:])
		var chunk [5]byte
		for j := 4; j >= 0; j-- {
			chunk[j] = z85Alphabet[v%85]
			v /= 85
		}
		out = append(out, chunk[:]...)
	}
	return string(out)
}

// roaringArray hand-assembles a portable RoaringBitmapArray: bitmap 0 with an array container
// (key 0), a bitmap container (key 1) and a run container (key 2, run cookie); bitmap 1
// (high bits 1) with one array container. It returns the bytes and the values they hold.
func roaringArray() ([]byte, []uint64) {
	le16 := func(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
	le32 := func(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
	var want []uint64
	// bitmap 0: run cookie, 3 containers
	var bm0 []byte
	bm0 = le32(bm0, uint32(roaringCookie)|uint32(3-1)<<16)
	bm0 = append(bm0, 0b100) // container 2 is a run container
	bm0 = le16(bm0, 0)
	bm0 = le16(bm0, 3-1) // array: 3 values
	bm0 = le16(bm0, 1)
	bm0 = le16(bm0, 5000-1) // bitmap: 5000 values
	bm0 = le16(bm0, 2)
	bm0 = le16(bm0, 0) // run container: cardinality field unused
	// no offsets: fewer than 4 containers with the run cookie
	for _, v := range []uint16{1, 7, 65535} {
		bm0 = le16(bm0, v)
		want = append(want, uint64(v))
	}
	bits := make([]byte, 8192)
	for v := 0; v < 10000; v += 2 {
		bits[v/8] |= 1 << (v % 8)
		want = append(want, 1<<16|uint64(v))
	}
	bm0 = append(bm0, bits...)
	bm0 = le16(bm0, 1) // one run
	bm0 = le16(bm0, 10)
	bm0 = le16(bm0, 4) // 10..14
	for v := 10; v <= 14; v++ {
		want = append(want, 2<<16|uint64(v))
	}
	// bitmap 1: no-run cookie, 1 container, with offsets
	var bm1 []byte
	bm1 = le32(bm1, roaringNoRun)
	bm1 = le32(bm1, 1)
	bm1 = le16(bm1, 0)
	bm1 = le16(bm1, 0) // 1 value
	bm1 = le32(bm1, 0) // offset (ignored)
	bm1 = le16(bm1, 3)
	want = append(want, 1<<32|3)

	var out []byte
	out = le32(out, dvMagic)
	out = binary.LittleEndian.AppendUint64(out, 2)
	out = le32(out, 0)
	out = append(out, bm0...)
	out = le32(out, 1)
	out = append(out, bm1...)
	return out, want
}

func TestDecodeRoaringArray(t *testing.T) {
	blob, want := roaringArray()
	got, err := DecodeRoaringArray(blob)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %d values, want %d", len(got), len(want))
	}
	for _, n := range []int{0, 5, 13, 20, len(blob) - 1} {
		if _, err := DecodeRoaringArray(blob[:n]); !errors.Is(err, ErrBadDeletionVector) {
			t.Errorf("truncated to %d: %v", n, err)
		}
	}
}

func TestLoadDeletionVector(t *testing.T) {
	ctx := context.Background()
	blob, want := roaringArray()
	b := mem.New()
	id := uuid.New()
	var file []byte
	file = append(file, 1)
	file = binary.BigEndian.AppendUint32(file, uint32(len(blob)))
	file = append(file, blob...)
	file = binary.BigEndian.AppendUint32(file, crc32.ChecksumIEEE(blob))
	if err := objstore.PutBytes(ctx, b, "ab/deletion_vector_"+id.String()+".bin", file); err != nil {
		t.Fatal(err)
	}
	off := int32(1)
	dv := &txlog.DeletionVector{StorageType: "u", PathOrInlineDv: "ab" + z85Encode(id[:]), Offset: &off,
		SizeInBytes: int32(len(blob)), Cardinality: int64(len(want))}
	got, err := LoadDeletionVector(ctx, b, dv)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatal("relative DV decoded wrong")
	}
	// Inline: Z85 needs a multiple of 4 bytes; the descriptor's size cuts the padding.
	padded := append(append([]byte{}, blob...), make([]byte, (4-len(blob)%4)%4)...)
	inline := &txlog.DeletionVector{StorageType: "i", PathOrInlineDv: z85Encode(padded), SizeInBytes: int32(len(blob)), Cardinality: int64(len(want))}
	if got, err := LoadDeletionVector(ctx, b, inline); err != nil || !slices.Equal(got, want) {
		t.Fatalf("inline DV: %v", err)
	}
	// A flipped byte fails the checksum.
	file[10] ^= 0xff
	objstore.PutBytes(ctx, b, "ab/deletion_vector_"+id.String()+".bin", file)
	if _, err := LoadDeletionVector(ctx, b, dv); !errors.Is(err, ErrBadDeletionVector) {
		t.Fatalf("corrupt DV: %v", err)
	}
}

func FuzzDecodeRoaringArray(f *testing.F) {
	blob, _ := roaringArray()
	f.Add(blob)
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		DecodeRoaringArray(b) // must not panic
	})
}

func FuzzDecodeZ85(f *testing.F) {
	f.Add("0X9F0q2<2yJ-f)Gm2!e0")
	f.Add("#####")
	f.Add("abc")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := DecodeZ85(s)
		if err == nil && z85Encode(b) != s {
			t.Errorf("%q does not round-trip", s)
		}
	})
}
