package table

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/url"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrBadDeletionVector reports a deletion vector that cannot be decoded.
var ErrBadDeletionVector = errors.New("table: bad deletion vector")

const (
	z85Alphabet     = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
	dvMagic         = 1681511377
	roaringCookie   = 12347
	roaringNoRun    = 12346
	noOffsetMinimum = 4
)

var z85Decode = func() [256]int {
	var t [256]int
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = i
	}
	return t
}()

// DecodeZ85 decodes Z85 text (a multiple of 5 characters) into bytes.
func DecodeZ85(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("%w: Z85 length %d is not a multiple of 5", ErrBadDeletionVector, len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			d := z85Decode[s[i+j]]
			if d < 0 {
				return nil, fmt.Errorf("%w: invalid Z85 character %q at %d", ErrBadDeletionVector, s[i+j], i+j)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return nil, fmt.Errorf("%w: Z85 group at %d overflows", ErrBadDeletionVector, i)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(v))
	}
	return out, nil
}

// DeletionVectorPath returns the object key (relative to the table root) of a DV stored in a
// file ("u": <prefix><20-char Z85 UUID> -> <prefix>/deletion_vector_<uuid>.bin), or the
// decoded absolute path ("p").
func DeletionVectorPath(dv *txlog.DeletionVector) (string, error) {
	switch dv.StorageType {
	case "u":
		s := dv.PathOrInlineDv
		if len(s) < 20 {
			return "", fmt.Errorf("%w: relative DV id %q is shorter than 20 characters", ErrBadDeletionVector, s)
		}
		prefix, enc := s[:len(s)-20], s[len(s)-20:]
		raw, err := DecodeZ85(enc)
		if err != nil {
			return "", err
		}
		id, err := uuid.FromBytes(raw)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrBadDeletionVector, err)
		}
		name := "deletion_vector_" + id.String() + ".bin"
		if prefix != "" {
			return prefix + "/" + name, nil
		}
		return name, nil
	case "p":
		u, err := url.Parse(dv.PathOrInlineDv)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrBadDeletionVector, err)
		}
		return u.Path, nil
	}
	return "", fmt.Errorf("%w: storage type %q has no file", ErrBadDeletionVector, dv.StorageType)
}

// OpenURL opens the bucket rooted at a location URL (a directory, "s3://bucket/prefix" or
// "file:///abs/dir"): how a table reaches files its log names by an absolute path outside its
// own root, such as the deletion vectors of a shallow clone, which stay with the source table.
// The caller closes the bucket.
type OpenURL func(ctx context.Context, url string) (objstore.Bucket, error)

// LoadDeletionVector returns the sorted row indexes a DV deletes. An absolute ("p") path is
// looked up under the table root (see resolveAbsoluteDV); one outside it is not reachable
// without an OpenURL (LoadDeletionVectorFrom).
func LoadDeletionVector(ctx context.Context, b objstore.Bucket, dv *txlog.DeletionVector) ([]uint64, error) {
	return LoadDeletionVectorFrom(ctx, b, nil, dv)
}

// resolveAbsoluteDV finds the object an absolute DV path names. The table's bucket does not
// know its own URL, so the path's trailing segments are tried as keys under the table root,
// longest first ("s3://b/warehouse/t/ab/deletion_vector_<uuid>.bin" -> "warehouse/t/ab/...",
// "t/ab/...", "ab/deletion_vector_<uuid>.bin", ...): DV names carry a random UUID, so a match is
// the file. Conversions and restores write such paths into the table's own root. A path found
// nowhere under the root (a shallow clone's DV, in its source table) is opened at its own
// location with open, when one is given; close releases that bucket.
func resolveAbsoluteDV(ctx context.Context, b objstore.Bucket, open OpenURL, raw string) (bucket objstore.Bucket, key string, close func(), err error) {
	key, err = dvKeyInTable(ctx, b, raw)
	if err == nil {
		return b, key, func() {}, nil
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return nil, "", nil, err
	}
	if open == nil {
		return nil, "", nil, fmt.Errorf("%w: deletion vector %s is not under the table root, and no opener for other locations was given", objstore.ErrNotFound, raw)
	}
	i := strings.LastIndex(raw, "/")
	if i < 0 {
		return nil, "", nil, fmt.Errorf("%w: absolute DV path %q has no directory", ErrBadDeletionVector, raw)
	}
	ext, err := open(ctx, raw[:i])
	if err != nil {
		return nil, "", nil, fmt.Errorf("table: open the location of deletion vector %s: %w", raw, err)
	}
	return ext, raw[i+1:], func() { ext.Close() }, nil
}

// dvKeyInTable returns the key under the table root of an absolute DV path, or ErrNotFound.
func dvKeyInTable(ctx context.Context, b objstore.Bucket, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: absolute DV path %q: %v", ErrBadDeletionVector, raw, err)
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(segs) == 0 || segs[len(segs)-1] == "" {
		return "", fmt.Errorf("%w: absolute DV path %q names no file", ErrBadDeletionVector, raw)
	}
	for i := range segs {
		key := strings.Join(segs[i:], "/")
		if objstore.ValidateKey(key) != nil {
			continue
		}
		_, err := b.Stat(ctx, key)
		if err == nil {
			return key, nil
		}
		if !errors.Is(err, objstore.ErrNotFound) {
			return "", fmt.Errorf("table: look up deletion vector %s: %w", raw, err)
		}
	}
	return "", fmt.Errorf("%w: deletion vector %s", objstore.ErrNotFound, raw)
}

// LoadDeletionVectorFrom is LoadDeletionVector with a way to open locations outside the
// table root (nil: none).
func LoadDeletionVectorFrom(ctx context.Context, b objstore.Bucket, open OpenURL, dv *txlog.DeletionVector) ([]uint64, error) {
	var blob []byte
	switch dv.StorageType {
	case "i":
		raw, err := DecodeZ85(dv.PathOrInlineDv)
		if err != nil {
			return nil, err
		}
		if int(dv.SizeInBytes) > len(raw) {
			return nil, fmt.Errorf("%w: inline DV has %d bytes, descriptor says %d", ErrBadDeletionVector, len(raw), dv.SizeInBytes)
		}
		blob = raw[:dv.SizeInBytes]
	case "u", "p":
		var key string
		if dv.StorageType == "u" {
			var err error
			if key, err = DeletionVectorPath(dv); err != nil {
				return nil, err
			}
		} else {
			ext, k, done, err := resolveAbsoluteDV(ctx, b, open, dv.PathOrInlineDv)
			if err != nil {
				return nil, fmt.Errorf("table: read deletion vector: %w", err)
			}
			defer done()
			b, key = ext, k
		}
		off := int64(0)
		if dv.Offset != nil {
			off = int64(*dv.Offset)
		}
		rc, err := b.GetRange(ctx, key, off, int64(dv.SizeInBytes)+8)
		if err != nil {
			return nil, fmt.Errorf("table: read deletion vector %s: %w", key, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("table: read deletion vector %s: %w", key, err)
		}
		if len(data) < 4 {
			return nil, fmt.Errorf("%w: %s: truncated at offset %d", ErrBadDeletionVector, key, off)
		}
		size := int(binary.BigEndian.Uint32(data))
		if size != int(dv.SizeInBytes) || len(data) < 8+size {
			return nil, fmt.Errorf("%w: %s: size %d at offset %d, descriptor says %d", ErrBadDeletionVector, key, size, off, dv.SizeInBytes)
		}
		blob = data[4 : 4+size]
		want := binary.BigEndian.Uint32(data[4+size:])
		if got := crc32.ChecksumIEEE(blob); got != want {
			return nil, fmt.Errorf("%w: %s: checksum %08x, want %08x", ErrBadDeletionVector, key, got, want)
		}
	default:
		return nil, fmt.Errorf("%w: unknown storage type %q", ErrBadDeletionVector, dv.StorageType)
	}
	rows, err := DecodeRoaringArray(blob)
	if err != nil {
		return nil, err
	}
	if int64(len(rows)) != dv.Cardinality {
		return nil, fmt.Errorf("%w: %d rows, descriptor cardinality %d", ErrBadDeletionVector, len(rows), dv.Cardinality)
	}
	return rows, nil
}

// DecodeRoaringArray decodes Delta's portable 64-bit RoaringBitmapArray (magic, bitmap count,
// then per bitmap its high 32 bits and a portable 32-bit Roaring bitmap) into sorted values.
func DecodeRoaringArray(b []byte) ([]uint64, error) {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadDeletionVector, fmt.Sprintf(f, a...))
	}
	if len(b) < 12 {
		return nil, bad("bitmap array of %d bytes is too short", len(b))
	}
	if m := binary.LittleEndian.Uint32(b); m != dvMagic {
		return nil, bad("magic %d, want %d", m, dvMagic)
	}
	n := binary.LittleEndian.Uint64(b[4:])
	b = b[12:]
	var out []uint64
	for i := uint64(0); i < n; i++ {
		if len(b) < 4 {
			return nil, bad("bitmap %d truncated", i)
		}
		high := uint64(binary.LittleEndian.Uint32(b)) << 32
		var err error
		var used int
		out, used, err = decodeRoaring32(b[4:], high, out)
		if err != nil {
			return nil, bad("bitmap %d: %v", i, err)
		}
		b = b[4+used:]
	}
	if !sort.SliceIsSorted(out, func(i, j int) bool { return out[i] < out[j] }) {
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	}
	return out, nil
}

// decodeRoaring32 decodes one bitmap in the portable Roaring format and returns the bytes it
// used.
func decodeRoaring32(b []byte, high uint64, out []uint64) ([]uint64, int, error) {
	if len(b) < 4 {
		return out, 0, fmt.Errorf("truncated cookie")
	}
	cookie := binary.LittleEndian.Uint32(b)
	pos := 4
	var n int
	var runs []byte
	hasOffsets := true
	switch {
	case cookie&0xffff == roaringCookie:
		n = int(cookie>>16) + 1
		rb := (n + 7) / 8
		if len(b) < pos+rb {
			return out, 0, fmt.Errorf("truncated run bitmap")
		}
		runs = b[pos : pos+rb]
		pos += rb
		hasOffsets = n >= noOffsetMinimum
	case cookie == roaringNoRun:
		if len(b) < 8 {
			return out, 0, fmt.Errorf("truncated header")
		}
		n = int(binary.LittleEndian.Uint32(b[4:]))
		pos = 8
	default:
		return out, 0, fmt.Errorf("unknown cookie %d", cookie)
	}
	if n > 1<<16 || len(b) < pos+4*n {
		return out, 0, fmt.Errorf("bad container count %d", n)
	}
	keys := make([]uint16, n)
	cards := make([]int, n)
	for i := 0; i < n; i++ {
		keys[i] = binary.LittleEndian.Uint16(b[pos:])
		cards[i] = int(binary.LittleEndian.Uint16(b[pos+2:])) + 1
		pos += 4
	}
	if hasOffsets {
		pos += 4 * n
	}
	for i := 0; i < n; i++ {
		base := high | uint64(keys[i])<<16
		isRun := runs != nil && runs[i/8]&(1<<(i%8)) != 0
		switch {
		case isRun:
			if len(b) < pos+2 {
				return out, 0, fmt.Errorf("truncated run container")
			}
			nr := int(binary.LittleEndian.Uint16(b[pos:]))
			pos += 2
			if len(b) < pos+4*nr {
				return out, 0, fmt.Errorf("truncated run container")
			}
			for r := 0; r < nr; r++ {
				start := uint64(binary.LittleEndian.Uint16(b[pos:]))
				length := uint64(binary.LittleEndian.Uint16(b[pos+2:]))
				pos += 4
				for v := start; v <= start+length; v++ {
					out = append(out, base|v)
				}
			}
		case cards[i] > 4096:
			if len(b) < pos+8192 {
				return out, 0, fmt.Errorf("truncated bitmap container")
			}
			for w := 0; w < 1024; w++ {
				word := binary.LittleEndian.Uint64(b[pos+8*w:])
				for bit := 0; word != 0 && bit < 64; bit++ {
					if word&(1<<bit) != 0 {
						out = append(out, base|uint64(w*64+bit))
					}
				}
			}
			pos += 8192
		default:
			if len(b) < pos+2*cards[i] {
				return out, 0, fmt.Errorf("truncated array container")
			}
			for k := 0; k < cards[i]; k++ {
				out = append(out, base|uint64(binary.LittleEndian.Uint16(b[pos+2*k:])))
			}
			pos += 2 * cards[i]
		}
	}
	return out, pos, nil
}
