package pq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Boolean column chunks that may hold RLE-encoded values are decoded here, page by page from
// the file's bytes, instead of by parquet-go: v0.32.0 decodes an RLE boolean run as a bitmap
// byte broadcast over ceil(count/8) bytes (encoding/rle decodeBits), which only matches the
// runs parquet-go's own encoder writes (multiples of 8 values, value byte 0x00 or 0xFF). A
// standard run (pyarrow writes RLE for every boolean of a data page v2, parquet-mr's v2
// writers too) has any length and a value of 0 or 1, so parquet-go returns wrong values.
// The output is exactly what readColumnChunk returns for the leaf, so the assembler is
// unchanged. Every other chunk keeps parquet-go's path.

// readLeaf returns every value of leaf l in row group g (see readColumnChunk).
func (r *fileReader) readLeaf(g, l int, cc parquet.ColumnChunk) ([]parquet.Value, error) {
	if md, ok := r.ownBoolChunk(g, l); ok {
		col := leafColumn(r.file.Root(), l)
		if col == nil {
			return nil, fmt.Errorf("%w: row group %d: no schema column for leaf %d", ErrBadDataFile, g, l)
		}
		vals, err := readBoolChunk(r.file, md, l, col.MaxRepetitionLevel(), col.MaxDefinitionLevel())
		if err != nil {
			return nil, fmt.Errorf("%w: row group %d: column %s: %v", ErrBadDataFile, g, strings.Join(md.PathInSchema, "."), err)
		}
		return vals, nil
	}
	vals, err := ReadColumnChunk(cc, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: read column %d of row group %d: %v", ErrBadDataFile, l, g, err)
	}
	return vals, nil
}

// ownBoolChunk reports whether leaf l of row group g is a BOOLEAN chunk whose metadata lists
// the RLE encoding (for its values or only its levels: which one is known per page), and
// returns its metadata. Encrypted chunks are left to parquet-go.
func (r *fileReader) ownBoolChunk(g, l int) (*format.ColumnMetaData, bool) {
	rgs := r.file.Metadata().RowGroups
	if g < 0 || g >= len(rgs) || l < 0 || l >= len(rgs[g].Columns) {
		return nil, false
	}
	cc := &rgs[g].Columns[l]
	if cc.CryptoMetadata.Value != nil || len(cc.EncryptedColumnMetadata) != 0 {
		return nil, false
	}
	md := &cc.MetaData
	if md.Type != format.Boolean || !slices.Contains(md.Encoding, format.RLE) {
		return nil, false
	}
	return md, true
}

// leafColumn returns the leaf column of index l below c, nil if there is none.
func leafColumn(c *parquet.Column, l int) *parquet.Column {
	if c.Leaf() {
		if c.Index() == l {
			return c
		}
		return nil
	}
	for _, ch := range c.Columns() {
		if lc := leafColumn(ch, l); lc != nil {
			return lc
		}
	}
	return nil
}

// readBoolChunk decodes the boolean column chunk md of leaf l (levels up to maxRep and
// maxDef) into one parquet.Value per level pair, as parquet-go's page reader does.
func readBoolChunk(f *parquet.File, md *format.ColumnMetaData, l, maxRep, maxDef int) ([]parquet.Value, error) {
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	size := md.TotalCompressedSize
	if start < 0 || size < 0 || start > f.Size() || size > f.Size()-start {
		return nil, fmt.Errorf("chunk [%d, +%d) is outside the file of %d bytes", start, size, f.Size())
	}
	chunk := make([]byte, size)
	if n, err := f.ReadAt(chunk, start); n != len(chunk) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	codec := parquet.LookupCompressionCodec(md.Codec)
	compressed := md.Codec != format.Uncompressed
	d := &boolPageDecoder{maxRep: maxRep, maxDef: maxDef, leaf: l}
	if n := md.NumValues; n > 0 && n <= size*8*8 && n < 1<<26 {
		// At most 64 levels per byte for a sane reservation; a corrupt count stays bounded.
		d.out = make([]parquet.Value, 0, n)
	}
	proto := new(thrift.CompactProtocol)
	rd := proto.NewReaderFromBytes(nil)
	for pos := 0; pos < len(chunk); {
		rd.ResetBytes(chunk[pos:])
		var h format.PageHeader
		if err := thrift.NewDecoder(rd).Decode(&h); err != nil {
			return nil, fmt.Errorf("page header at chunk offset %d: %v", pos, err)
		}
		pos += rd.BytesRead()
		if h.CompressedPageSize < 0 || int(h.CompressedPageSize) > len(chunk)-pos || h.UncompressedPageSize < 0 {
			return nil, fmt.Errorf("page at chunk offset %d claims %d bytes (%d uncompressed), the chunk has %d left",
				pos, h.CompressedPageSize, h.UncompressedPageSize, len(chunk)-pos)
		}
		page := chunk[pos : pos+int(h.CompressedPageSize)]
		pos += len(page)
		decompress := func(b []byte) ([]byte, error) {
			// The header's size is a hint only (a corrupt one must not reserve gigabytes).
			out, err := codec.Decode(make([]byte, 0, min(int(h.UncompressedPageSize), 1<<24)), b)
			if err != nil {
				return nil, fmt.Errorf("decompress %s page: %v", md.Codec, err)
			}
			return out, nil
		}
		switch h.Type {
		case format.DataPage:
			ph, ok := h.DataPageHeader.Get()
			if !ok {
				return nil, errors.New("data page without a data page header")
			}
			if compressed {
				var err error
				if page, err = decompress(page); err != nil {
					return nil, err
				}
			}
			if err := d.pageV1(&ph, page); err != nil {
				return nil, err
			}
		case format.DataPageV2:
			ph, ok := h.DataPageHeaderV2.Get()
			if !ok {
				return nil, errors.New("data page v2 without a data page header")
			}
			if err := d.pageV2(&ph, page, compressed, decompress); err != nil {
				return nil, err
			}
		case format.DictionaryPage:
			return nil, errors.New("dictionary-encoded booleans are not supported")
		default:
			// Index pages (never written in practice) carry no values.
		}
	}
	return d.out, nil
}

// boolPageDecoder decodes the data pages of one boolean chunk into out.
type boolPageDecoder struct {
	maxRep, maxDef, leaf int
	reps, defs, bits     []byte
	out                  []parquet.Value
}

// pageV1 decodes a data page v1: repetition levels, definition levels (each a 4-byte
// little-endian length then the RLE/bit-packed hybrid, present only when the maximum level
// is not 0) and the values, all in the decompressed page.
func (d *boolPageDecoder) pageV1(h *format.DataPageHeader, page []byte) error {
	nv := int(h.NumValues)
	if nv < 0 {
		return fmt.Errorf("data page of %d values", nv)
	}
	var err error
	levels := func(enc format.Encoding, max int, dst []byte, what string) ([]byte, error) {
		if max == 0 {
			return dst[:0], nil
		}
		if enc != format.RLE {
			return nil, fmt.Errorf("%s levels use the %s encoding, only RLE is supported", what, enc)
		}
		if len(page) < 4 {
			return nil, fmt.Errorf("%s levels: %w", what, io.ErrUnexpectedEOF)
		}
		n := binary.LittleEndian.Uint32(page)
		if uint64(n) > uint64(len(page)-4) {
			return nil, fmt.Errorf("%s levels of %d bytes, the page has %d left: %w", what, n, len(page)-4, io.ErrUnexpectedEOF)
		}
		b := page[4 : 4+n]
		page = page[4+n:]
		return decodeLevels(dst, b, max, nv, what)
	}
	if d.reps, err = levels(h.RepetitionLevelEncoding, d.maxRep, d.reps, "repetition"); err != nil {
		return err
	}
	if d.defs, err = levels(h.DefinitionLevelEncoding, d.maxDef, d.defs, "definition"); err != nil {
		return err
	}
	return d.values(h.Encoding, nv, page)
}

// pageV2 decodes a data page v2: the level sections (lengths in the header, no length
// prefix, never compressed) then the values, compressed iff the header says so (default
// true) and the chunk has a codec.
func (d *boolPageDecoder) pageV2(h *format.DataPageHeaderV2, page []byte, compressed bool, decompress func([]byte) ([]byte, error)) error {
	nv := int(h.NumValues)
	rl, dl := int(h.RepetitionLevelsByteLength), int(h.DefinitionLevelsByteLength)
	if nv < 0 || rl < 0 || dl < 0 || rl > len(page) || dl > len(page)-rl {
		return fmt.Errorf("data page v2 of %d values with levels of %d and %d bytes in %d bytes", nv, rl, dl, len(page))
	}
	var err error
	d.reps, d.defs = d.reps[:0], d.defs[:0]
	if d.maxRep > 0 {
		if d.reps, err = decodeLevels(d.reps, page[:rl], d.maxRep, nv, "repetition"); err != nil {
			return err
		}
	}
	if d.maxDef > 0 {
		if d.defs, err = decodeLevels(d.defs, page[rl:rl+dl], d.maxDef, nv, "definition"); err != nil {
			return err
		}
	}
	values := page[rl+dl:]
	if compressed && (!h.IsCompressed.Valid || h.IsCompressed.V) {
		if values, err = decompress(values); err != nil {
			return err
		}
	}
	return d.values(h.Encoding, nv, values)
}

// decodeLevels decodes n levels of at most max from the hybrid encoding in b.
func decodeLevels(dst, b []byte, max, n int, what string) ([]byte, error) {
	dst, err := (&rle.Encoding{BitWidth: bitWidthOf(max)}).DecodeLevels(dst[:0], b)
	if err != nil {
		return nil, fmt.Errorf("%s levels: %v", what, err)
	}
	if len(dst) < n {
		return nil, fmt.Errorf("%d %s levels for %d values", len(dst), what, n)
	}
	dst = dst[:n]
	for _, v := range dst {
		if int(v) > max {
			return nil, fmt.Errorf("%s level %d above the maximum %d", what, v, max)
		}
	}
	return dst, nil
}

// bitWidthOf is the number of bits of max.
func bitWidthOf(max int) int {
	w := 0
	for max > 0 {
		w++
		max >>= 1
	}
	return w
}

// values decodes the present values of a page of nv levels (d.reps and d.defs, empty when
// the column has no such level) and appends one value per level.
func (d *boolPageDecoder) values(enc format.Encoding, nv int, b []byte) error {
	present := nv
	if d.maxDef > 0 {
		present = 0
		for _, v := range d.defs {
			if int(v) == d.maxDef {
				present++
			}
		}
	}
	switch enc {
	case format.Plain:
		// LSB-first bit-packed, one bit per present value.
		if (present+7)/8 > len(b) {
			return fmt.Errorf("PLAIN page of %d present values in %d bytes: %w", present, len(b), io.ErrUnexpectedEOF)
		}
		d.bits = slices.Grow(d.bits[:0], present)[:present]
		for i := range d.bits {
			d.bits[i] = b[i>>3] >> (i & 7) & 1
		}
	case format.RLE:
		// A 4-byte little-endian length, then the hybrid encoding of bit width 1.
		d.bits = d.bits[:0]
		if present > 0 || len(b) > 0 {
			if len(b) < 4 {
				return fmt.Errorf("RLE page values: %w", io.ErrUnexpectedEOF)
			}
			n := binary.LittleEndian.Uint32(b)
			if uint64(n) > uint64(len(b)-4) {
				return fmt.Errorf("RLE page values of %d bytes, the page has %d: %w", n, len(b)-4, io.ErrUnexpectedEOF)
			}
			var err error
			if d.bits, err = (&rle.Encoding{BitWidth: 1}).DecodeLevels(d.bits, b[4:4+n]); err != nil {
				return fmt.Errorf("RLE page values: %v", err)
			}
		}
		if len(d.bits) < present {
			return fmt.Errorf("RLE page of %d present values decodes %d", present, len(d.bits))
		}
	case format.RLEDictionary:
		return errors.New("dictionary-encoded booleans are not supported")
	default:
		return fmt.Errorf("boolean page encoding %s is not supported", enc)
	}
	j := 0
	for i := 0; i < nv; i++ {
		rep, def := 0, d.maxDef
		if d.maxRep > 0 {
			rep = int(d.reps[i])
		}
		if d.maxDef > 0 {
			def = int(d.defs[i])
		}
		if def < d.maxDef {
			d.out = append(d.out, parquet.Value{}.Level(rep, def, d.leaf))
			continue
		}
		d.out = append(d.out, parquet.BooleanValue(d.bits[j] != 0).Level(rep, def, d.leaf))
		j++
	}
	return nil
}
