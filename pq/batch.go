package pq

import (
	"fmt"
	"math/big"
	"math/bits"
	"slices"
	"time"

	"github.com/medallion-lake/medallion/txlog"
)

// Kind is the in-memory representation a column uses; several Delta types share one.
type Kind uint8

// Column kinds.
const (
	KindNull    Kind = iota // void: every value is null
	KindInt64               // long, timestamp and timestamp_ntz (microseconds since the epoch)
	KindInt32               // integer, short, byte, date (days since the epoch)
	KindFloat64             // double
	KindFloat32             // float
	KindBool                // boolean
	KindBytes               // string, binary
	KindDecimal             // decimal(p,s) as a 128-bit unscaled integer
	KindStruct              // struct: Children are the fields
	KindList                // array: Children[0] holds the elements, Offsets the ranges
	KindMap                 // map: Children[0] keys, Children[1] values, Offsets the ranges
)

// KindOf returns the in-memory kind of a Delta type.
func KindOf(t txlog.DataType) (Kind, error) {
	switch v := t.(type) {
	case txlog.PrimitiveType:
		switch v.Name {
		case txlog.TypeLong, txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			return KindInt64, nil
		case txlog.TypeInteger, txlog.TypeShort, txlog.TypeByte, txlog.TypeDate:
			return KindInt32, nil
		case txlog.TypeDouble:
			return KindFloat64, nil
		case txlog.TypeFloat:
			return KindFloat32, nil
		case txlog.TypeBoolean:
			return KindBool, nil
		case txlog.TypeString, txlog.TypeBinary:
			return KindBytes, nil
		case txlog.TypeVariant:
			return KindBytes, nil // its JSON text: see variant.go
		case txlog.TypeVoid:
			return KindNull, nil
		}
	case txlog.DecimalType:
		return KindDecimal, nil
	case *txlog.StructType:
		return KindStruct, nil
	case txlog.ArrayType:
		return KindList, nil
	case txlog.MapType:
		return KindMap, nil
	}
	return 0, fmt.Errorf("table: unsupported data type %s", t.TypeName())
}

// Decimal128 is a 128-bit two's complement unscaled decimal value: enough for decimal(38,s).
type Decimal128 struct {
	Hi int64
	Lo uint64
}

var two64 = new(big.Int).Lsh(big.NewInt(1), 64)

// BigInt returns the unscaled value.
func (d Decimal128) BigInt() *big.Int {
	v := new(big.Int).SetInt64(d.Hi)
	v.Mul(v, two64)
	return v.Add(v, new(big.Int).SetUint64(d.Lo))
}

// DecimalFromBigInt converts an unscaled value; ok is false when it does not fit 128 bits.
func DecimalFromBigInt(v *big.Int) (d Decimal128, ok bool) {
	if v.BitLen() > 127 {
		return d, false
	}
	q, r := new(big.Int).DivMod(v, two64, new(big.Int)) // Euclidean: r >= 0
	return Decimal128{Hi: q.Int64(), Lo: r.Uint64()}, true
}

// DecimalFromInt64 converts a small unscaled value.
func DecimalFromInt64(v int64) Decimal128 {
	hi := int64(0)
	if v < 0 {
		hi = -1
	}
	return Decimal128{Hi: hi, Lo: uint64(v)}
}

// Cmp compares two unscaled values.
func (d Decimal128) Cmp(o Decimal128) int {
	switch {
	case d.Hi < o.Hi:
		return -1
	case d.Hi > o.Hi:
		return 1
	case d.Lo < o.Lo:
		return -1
	case d.Lo > o.Lo:
		return 1
	}
	return 0
}

// Neg returns -d. The one value without a negation, -2^127, comes back unchanged; it lies
// outside decimal(38,s), whose magnitudes stay below 10^38.
func (d Decimal128) Neg() Decimal128 {
	lo, borrow := bits.Sub64(0, d.Lo, 0)
	hi, _ := bits.Sub64(0, uint64(d.Hi), borrow)
	return Decimal128{Hi: int64(hi), Lo: lo}
}

// Bytes returns the big-endian two's complement form in n bytes (n <= 16), as Parquet's
// FIXED_LEN_BYTE_ARRAY decimals store it.
func (d Decimal128) Bytes(dst []byte, n int) []byte {
	var full [16]byte
	for i := 0; i < 8; i++ {
		full[7-i] = byte(uint64(d.Hi) >> (8 * i))
		full[15-i] = byte(d.Lo >> (8 * i))
	}
	return append(dst, full[16-n:]...)
}

// DecimalFromBytes reads a big-endian two's complement value of up to 16 bytes.
func DecimalFromBytes(b []byte) (Decimal128, bool) {
	if len(b) > 16 {
		// Only sign extension may be dropped.
		for _, c := range b[:len(b)-16] {
			if c != 0 && c != 0xff {
				return Decimal128{}, false
			}
		}
		b = b[len(b)-16:]
	}
	var full [16]byte
	if len(b) > 0 && b[0]&0x80 != 0 {
		for i := range full {
			full[i] = 0xff
		}
	}
	copy(full[16-len(b):], b)
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(full[i])
		lo = lo<<8 | uint64(full[8+i])
	}
	return Decimal128{Hi: int64(hi), Lo: lo}, true
}

// FormatDecimal renders an unscaled value with the given scale ("-12.345").
func FormatDecimal(d Decimal128, scale int) string {
	s := d.BigInt().String()
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	if scale > 0 {
		for len(s) <= scale {
			s = "0" + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// ParseDecimal parses a plain decimal text into an unscaled value of the given scale; digits
// beyond the scale must be zero.
//
// The usual form ([+-]digits[.digits][(e|E)[+-]digits]) is parsed in one pass straight into a
// Decimal128, so that a hostile value costs time linear in its length: normalising through
// big.Rat was quadratic, and a million-digit field cost about 70 s of CPU. A value whose
// significant digits cannot fit 128 bits, or whose exponent has more than maxDecimalExpDigits
// digits, is refused without further work. Other forms big.Rat accepts (fractions, base
// prefixes, underscores) still go through big.Rat, but only when short, so no input is
// expensive.
func ParseDecimal(s string, scale int) (Decimal128, error) {
	d, plain, err := parsePlainDecimal(s, scale)
	if plain {
		return d, err
	}
	if len(s) > maxExoticDecimalLen {
		return Decimal128{}, fmt.Errorf("table: %q is not a decimal", truncateForError(s))
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return Decimal128{}, fmt.Errorf("table: %q is not a decimal", s)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !r.IsInt() {
		return Decimal128{}, fmt.Errorf("table: %q has more than %d fractional digits", s, scale)
	}
	d, ok = DecimalFromBigInt(r.Num())
	if !ok {
		return Decimal128{}, fmt.Errorf("table: %q does not fit decimal(38,%d)", s, scale)
	}
	return d, nil
}

const (
	// maxDecimalExpDigits bounds an exponent's digits (after leading zeros): a larger exponent
	// cannot give a value that fits 128 bits, except for zero, and is refused as absurd.
	maxDecimalExpDigits = 6
	// maxExoticDecimalLen bounds the texts that still go through big.Rat.
	maxExoticDecimalLen = 128
	// maxDecimalDigits is the most significant digits a 128-bit value can have (2^127 has 39).
	maxDecimalDigits = 39
)

// truncateForError keeps an error message short whatever the input.
func truncateForError(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// parsePlainDecimal parses [+-]digits[.digits][(e|E)[+-]digits] in linear time. plain is false
// when s has another form, which the caller handles. The result equals big.Rat's for every
// value it accepts.
func parsePlainDecimal(s string, scale int) (d Decimal128, plain bool, err error) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(s) && s[i] == '.' {
		i++
		fracStart = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		fracEnd = i
	}
	if intEnd == intStart && fracEnd == fracStart {
		return d, false, nil
	}
	exp := int64(0)
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		e0 := i
		for i < len(s) && s[i] == '0' {
			i++
		}
		sig := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == e0 {
			return d, false, nil
		}
		if i-sig > maxDecimalExpDigits {
			if i == len(s) {
				return d, true, fmt.Errorf("table: %q has an exponent of more than %d digits", truncateForError(s), maxDecimalExpDigits)
			}
			return d, false, nil
		}
		for _, c := range s[sig:i] {
			exp = exp*10 + int64(c-'0')
		}
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return d, false, nil
	}
	// The value is digits * 10^shift, digits being the integer and fraction digits together.
	digits := func(k int) byte { // k-th digit of int+frac, without building the string
		if k < intEnd-intStart {
			return s[intStart+k]
		}
		return s[fracStart+k-(intEnd-intStart)]
	}
	n := (intEnd - intStart) + (fracEnd - fracStart)
	lo, hi := 0, n
	for lo < hi && digits(lo) == '0' {
		lo++
	}
	if lo == hi {
		return Decimal128{}, true, nil // zero, whatever the exponent
	}
	shift := exp - int64(fracEnd-fracStart) + int64(scale)
	for digits(hi-1) == '0' {
		hi--
		shift++
	}
	if shift < 0 {
		return d, true, fmt.Errorf("table: %q has more than %d fractional digits", truncateForError(s), scale)
	}
	tooBig := func() error { // built only when needed: formatting costs more than the parse
		return fmt.Errorf("table: %q does not fit decimal(38,%d)", truncateForError(s), scale)
	}
	if int64(hi-lo)+shift > maxDecimalDigits {
		return d, true, tooBig()
	}
	var u uint128
	ok := true
	for k := lo; k < hi && ok; k++ {
		u, ok = u.mulAdd(10, uint64(digits(k)-'0'))
	}
	for k := int64(0); k < shift && ok; k++ {
		u, ok = u.mulAdd(10, 0)
	}
	if !ok || u.hi>>63 != 0 { // the magnitude must stay below 2^127, as DecimalFromBigInt wants
		return d, true, tooBig()
	}
	d = Decimal128{Hi: int64(u.hi), Lo: u.lo}
	if neg {
		d = d.Neg()
	}
	return d, true, nil
}

type uint128 struct{ hi, lo uint64 }

// mulAdd returns u*m+a, and false on overflow of 128 bits.
func (u uint128) mulAdd(m, a uint64) (uint128, bool) {
	hiHi, hiLo := bits.Mul64(u.hi, m)
	loHi, loLo := bits.Mul64(u.lo, m)
	hi, carry := bits.Add64(hiLo, loHi, 0)
	if hiHi != 0 || carry != 0 {
		return u, false
	}
	lo, c := bits.Add64(loLo, a, 0)
	hi, carry = bits.Add64(hi, 0, c)
	if carry != 0 {
		return u, false
	}
	return uint128{hi, lo}, true
}

// Column is one column of a Batch: a typed slice chosen by Kind, plus a null mask. Only the
// slice of the column's Kind is used; every used slice has Len entries (Offsets has Len+1),
// and a null row still holds a zero value so that indexes line up.
type Column struct {
	Type txlog.DataType
	Kind Kind
	Len  int
	// Nulls is nil while the column has no null; otherwise Nulls[i] reports row i as null.
	Nulls []bool

	Int64   []int64
	Int32   []int32
	Float64 []float64
	Float32 []float32
	Bool    []bool
	Decimal []Decimal128
	// Offsets delimits row i as [Offsets[i], Offsets[i+1]): bytes of Data for KindBytes,
	// elements of Children for KindList and KindMap.
	Offsets []int32
	Data    []byte
	// Children are the struct fields (in schema order), the list element column, or the map
	// key and value columns.
	Children []*Column

	// dict is the Parquet dictionary a string column was read through (see Dictionary).
	dict *Dictionary
}

// Dictionary is a string column as its Parquet column chunk stored it: row i is entry
// Index[i] of Values (-1: null), each distinct value once. A reader that handles each
// distinct value once (a group key's encoding, hash and id) does so per entry instead of per
// row: at 1k keys a row group of tens of thousands of rows has at most 1k entries.
type Dictionary struct {
	Values *Column // KindBytes, of the column's type; entries may repeat or go unused
	Index  []int32
	// src is the parquet-go dictionary the pages were read through; valid is cleared by a
	// page that was not read through src.
	src   any
	valid bool
}

// Dictionary returns the dictionary the column was read through, or nil: the reader sets it
// only when every row of a top-level string column came from dictionary pages of one
// dictionary, and an append after the read (which leaves Index short) turns it off. The
// dictionary is the column's until the column is Reset: read it, do not keep it.
func (c *Column) Dictionary() *Dictionary {
	if d := c.dict; d != nil && d.valid && len(d.Index) == c.Len {
		return d
	}
	return nil
}

// NewColumn returns an empty column of the Delta type.
func NewColumn(t txlog.DataType) (*Column, error) {
	k, err := KindOf(t)
	if err != nil {
		return nil, err
	}
	c := &Column{Type: t, Kind: k}
	switch v := t.(type) {
	case *txlog.StructType:
		for _, f := range v.Fields {
			ch, err := NewColumn(f.Type)
			if err != nil {
				return nil, fmt.Errorf("table: field %s: %w", f.Name, err)
			}
			c.Children = append(c.Children, ch)
		}
	case txlog.ArrayType:
		ch, err := NewColumn(v.ElementType)
		if err != nil {
			return nil, err
		}
		c.Children = []*Column{ch}
	case txlog.MapType:
		kc, err := NewColumn(v.KeyType)
		if err != nil {
			return nil, err
		}
		vc, err := NewColumn(v.ValueType)
		if err != nil {
			return nil, err
		}
		c.Children = []*Column{kc, vc}
	}
	if k == KindBytes || k == KindList || k == KindMap {
		c.Offsets = []int32{0}
	}
	return c, nil
}

// Reset empties the column and keeps its buffers for reuse.
func (c *Column) Reset() {
	c.Len = 0
	c.Nulls = c.Nulls[:0]
	c.Int64, c.Int32, c.Float64, c.Float32 = c.Int64[:0], c.Int32[:0], c.Float64[:0], c.Float32[:0]
	c.Bool, c.Decimal, c.Data = c.Bool[:0], c.Decimal[:0], c.Data[:0]
	if c.Offsets != nil {
		c.Offsets = c.Offsets[:1]
	}
	if d := c.dict; d != nil {
		d.Values.Reset()
		d.Index, d.src, d.valid = d.Index[:0], nil, false
	}
	for _, ch := range c.Children {
		ch.Reset()
	}
}

// IsNull reports whether row i is null.
func (c *Column) IsNull(i int) bool { return len(c.Nulls) > i && c.Nulls[i] }

// HasNulls reports whether any row is null.
func (c *Column) HasNulls() bool {
	for _, n := range c.Nulls {
		if n {
			return true
		}
	}
	return false
}

// hasNullsIn reports whether any of the rows idx[lo:hi] (or [lo,hi) when idx is nil) is null.
func (c *Column) hasNullsIn(idx []int, lo, hi int) bool {
	if len(c.Nulls) == 0 {
		return false
	}
	if idx == nil {
		return slices.Contains(c.Nulls[lo:hi], true)
	}
	for _, i := range idx[lo:hi] {
		if c.Nulls[i] {
			return true
		}
	}
	return false
}

func (c *Column) markValid() {
	if len(c.Nulls) > 0 {
		c.Nulls = append(c.Nulls, false)
	}
	c.Len++
}

// AppendNull appends a null row (structs append a null to every field too, so that fields
// stay aligned with their parent).
func (c *Column) AppendNull() {
	if len(c.Nulls) < c.Len {
		c.Nulls = append(c.Nulls, make([]bool, c.Len-len(c.Nulls))...)
	}
	c.Nulls = append(c.Nulls, true)
	c.Len++
	switch c.Kind {
	case KindInt64:
		c.Int64 = append(c.Int64, 0)
	case KindInt32:
		c.Int32 = append(c.Int32, 0)
	case KindFloat64:
		c.Float64 = append(c.Float64, 0)
	case KindFloat32:
		c.Float32 = append(c.Float32, 0)
	case KindBool:
		c.Bool = append(c.Bool, false)
	case KindDecimal:
		c.Decimal = append(c.Decimal, Decimal128{})
	case KindBytes:
		c.Offsets = append(c.Offsets, int32(len(c.Data)))
	case KindList, KindMap:
		c.Offsets = append(c.Offsets, c.Offsets[len(c.Offsets)-1])
	case KindStruct:
		for _, ch := range c.Children {
			ch.AppendNull()
		}
	}
}

// AppendInt64 appends a long, or a timestamp in microseconds since the epoch.
func (c *Column) AppendInt64(v int64) { c.Int64 = append(c.Int64, v); c.markValid() }

// AppendTime appends a timestamp (microsecond precision, UTC).
func (c *Column) AppendTime(t time.Time) { c.AppendInt64(t.UnixMicro()) }

// AppendInt32 appends an integer, short, byte or date (days since the epoch).
func (c *Column) AppendInt32(v int32) { c.Int32 = append(c.Int32, v); c.markValid() }

// AppendFloat64 appends a double.
func (c *Column) AppendFloat64(v float64) { c.Float64 = append(c.Float64, v); c.markValid() }

// AppendFloat32 appends a float.
func (c *Column) AppendFloat32(v float32) { c.Float32 = append(c.Float32, v); c.markValid() }

// AppendBool appends a boolean.
func (c *Column) AppendBool(v bool) { c.Bool = append(c.Bool, v); c.markValid() }

// AppendDecimal appends an unscaled decimal.
func (c *Column) AppendDecimal(v Decimal128) { c.Decimal = append(c.Decimal, v); c.markValid() }

// AppendBytes appends a string or binary value; the bytes are copied.
func (c *Column) AppendBytes(b []byte) {
	c.Data = append(c.Data, b...)
	c.Offsets = append(c.Offsets, int32(len(c.Data)))
	c.markValid()
}

// AppendString appends a string value; the bytes are copied.
func (c *Column) AppendString(s string) {
	c.Data = append(c.Data, s...)
	c.Offsets = append(c.Offsets, int32(len(c.Data)))
	c.markValid()
}

// AppendStruct appends a non-null struct row; the caller appends one value to every field.
func (c *Column) AppendStruct() { c.markValid() }

// AppendList closes a non-null list (or map) row made of the elements appended to the
// children since the previous row.
func (c *Column) AppendList() {
	c.Offsets = append(c.Offsets, int32(c.Children[0].Len))
	c.markValid()
}

// BytesAt returns row i of a string or binary column, aliasing the column's buffer.
func (c *Column) BytesAt(i int) []byte { return c.Data[c.Offsets[i]:c.Offsets[i+1]] }

// StringAt returns row i of a string column as a new string.
func (c *Column) StringAt(i int) string { return string(c.BytesAt(i)) }

// ListRange returns the element range of a list or map row.
func (c *Column) ListRange(i int) (start, end int) {
	return int(c.Offsets[i]), int(c.Offsets[i+1])
}

// Batch is a set of rows stored column by column, in the order of Schema's fields.
type Batch struct {
	Schema  *txlog.StructType
	Columns []*Column
}

// NewBatch returns an empty batch for the schema.
func NewBatch(schema *txlog.StructType) (*Batch, error) {
	b := &Batch{Schema: schema, Columns: make([]*Column, len(schema.Fields))}
	for i, f := range schema.Fields {
		c, err := NewColumn(f.Type)
		if err != nil {
			return nil, fmt.Errorf("table: column %s: %w", f.Name, err)
		}
		b.Columns[i] = c
	}
	return b, nil
}

// Len is the number of rows.
func (b *Batch) Len() int {
	// A view laid out in a table's schema may leave unread columns nil (see tableView).
	for _, c := range b.Columns {
		if c != nil {
			return c.Len
		}
	}
	return 0
}

// Reset empties the batch and keeps its buffers.
func (b *Batch) Reset() {
	for _, c := range b.Columns {
		c.Reset()
	}
}

// Column returns the named top-level column, or nil.
func (b *Batch) Column(name string) *Column {
	i := b.Schema.FieldIndex(name)
	if i < 0 {
		return nil
	}
	return b.Columns[i]
}

// Validate checks that every column has the batch's length and a consistent shape.
func (b *Batch) Validate() error {
	if len(b.Columns) != len(b.Schema.Fields) {
		return fmt.Errorf("table: batch has %d columns, schema %d fields", len(b.Columns), len(b.Schema.Fields))
	}
	n := b.Len()
	for i, c := range b.Columns {
		if err := c.validate(n); err != nil {
			return fmt.Errorf("table: column %s: %w", b.Schema.Fields[i].Name, err)
		}
	}
	return nil
}

func (c *Column) validate(n int) error {
	if c.Len != n {
		return fmt.Errorf("has %d rows, want %d", c.Len, n)
	}
	if len(c.Nulls) != 0 && len(c.Nulls) != n {
		return fmt.Errorf("null mask has %d entries, want %d", len(c.Nulls), n)
	}
	var got int
	switch c.Kind {
	case KindNull:
		got = n
	case KindInt64:
		got = len(c.Int64)
	case KindInt32:
		got = len(c.Int32)
	case KindFloat64:
		got = len(c.Float64)
	case KindFloat32:
		got = len(c.Float32)
	case KindBool:
		got = len(c.Bool)
	case KindDecimal:
		got = len(c.Decimal)
	case KindBytes, KindList, KindMap:
		got = len(c.Offsets) - 1
		if got == n && c.Kind == KindBytes && int(c.Offsets[n]) > len(c.Data) {
			return fmt.Errorf("offsets run past the data")
		}
	case KindStruct:
		got = n
		for _, ch := range c.Children {
			if err := ch.validate(n); err != nil {
				return err
			}
		}
	}
	if got != n {
		return fmt.Errorf("%d values for %d rows", got, n)
	}
	if c.Kind == KindList || c.Kind == KindMap {
		m := int(c.Offsets[n])
		for _, ch := range c.Children {
			if err := ch.validate(m); err != nil {
				return fmt.Errorf("elements: %w", err)
			}
		}
	}
	return nil
}

// Filter returns a new batch holding the rows whose keep[i] is true (every row when keep is
// nil). It copies.
func (b *Batch) Filter(keep []bool) *Batch {
	out := &Batch{Schema: b.Schema, Columns: make([]*Column, len(b.Columns))}
	for i, c := range b.Columns {
		nc, _ := NewColumn(c.Type)
		for r := 0; r < c.Len; r++ {
			if keep == nil || keep[r] {
				nc.appendFrom(c, r)
			}
		}
		out.Columns[i] = nc
	}
	return out
}

// AppendRow appends row r of src (a batch of the same schema) to b.
func (b *Batch) AppendRow(src *Batch, r int) {
	for i, c := range b.Columns {
		c.appendFrom(src.Columns[i], r)
	}
}

// AppendRange appends rows [lo, hi) of src (a batch of the same schema) to b, as that many
// AppendRow calls would, with a copy per buffer instead of a call per row and value: a rewrite
// that keeps most of a file's rows copies them in runs.
func (b *Batch) AppendRange(src *Batch, lo, hi int) {
	for i, c := range b.Columns {
		c.appendRange(src.Columns[i], lo, hi)
	}
}

// appendRange copies rows [lo, hi) of src (same type) onto c, equal to appendFrom row by row.
// Flat columns copy their value buffers whole, nulls' slots included, and then set those
// slots as AppendNull would; lists, maps and a struct with nulls go row by row.
func (c *Column) appendRange(src *Column, lo, hi int) {
	if hi <= lo {
		return
	}
	nulls := lo < len(src.Nulls) && src.hasNullsIn(nil, lo, min(hi, len(src.Nulls)))
	switch c.Kind {
	case KindInt64:
		c.Int64 = appendRun(c.Int64, src, lo, hi, src.Int64)
	case KindInt32:
		c.Int32 = appendRun(c.Int32, src, lo, hi, src.Int32)
	case KindFloat64:
		c.Float64 = appendRun(c.Float64, src, lo, hi, src.Float64)
	case KindFloat32:
		c.Float32 = appendRun(c.Float32, src, lo, hi, src.Float32)
	case KindBool:
		c.Bool = appendRun(c.Bool, src, lo, hi, src.Bool)
	case KindDecimal:
		c.Decimal = appendRun(c.Decimal, src, lo, hi, src.Decimal)
	case KindBytes:
		from, to := src.Offsets[lo], src.Offsets[hi]
		shift := int32(len(c.Data)) - from
		c.Data = append(c.Data, src.Data[from:to]...)
		for _, o := range src.Offsets[lo+1 : hi+1] {
			c.Offsets = append(c.Offsets, o+shift)
		}
	case KindStruct:
		if nulls {
			break
		}
		for k, ch := range c.Children {
			ch.appendRange(src.Children[k], lo, hi)
		}
	default:
		nulls = true // lists, maps, null columns: row by row below
	}
	if flat := c.Kind != KindStruct && c.Kind != KindList && c.Kind != KindMap && c.Kind != KindNull; !flat && nulls {
		for r := lo; r < hi; r++ {
			c.appendFrom(src, r)
		}
		return
	}
	if nulls || len(c.Nulls) > 0 {
		if len(c.Nulls) < c.Len {
			c.Nulls = append(c.Nulls, make([]bool, c.Len-len(c.Nulls))...)
		}
		for r := lo; r < hi; r++ {
			c.Nulls = append(c.Nulls, src.IsNull(r))
		}
	}
	base := c.Len
	c.Len += hi - lo
	if nulls && c.Kind == KindBytes {
		c.dropNullBytes(base)
	}
}

// appendRun appends vals[lo:hi] to dst, the null rows of src among them as the zero value
// AppendNull gives them, whatever src held there.
func appendRun[T any](dst []T, src *Column, lo, hi int, vals []T) []T {
	n := len(dst)
	dst = append(dst, vals[lo:hi]...)
	var zero T
	for r := lo; r < min(hi, len(src.Nulls)); r++ {
		if src.Nulls[r] {
			dst[n+r-lo] = zero
		}
	}
	return dst
}

// dropNullBytes gives the null rows of a bytes column from row base on no bytes, as
// AppendNull does, whatever src held there.
func (c *Column) dropNullBytes(base int) {
	cut := int32(0) // bytes dropped so far
	for r := base; r < c.Len; r++ {
		// Offsets[r] is final already; Offsets[r+1] is still src's, shifted by cut.
		s, e := c.Offsets[r], c.Offsets[r+1]-cut
		if c.Nulls[r] && e > s {
			c.Data = append(c.Data[:s], c.Data[e:]...)
			cut += e - s
			e = s
		}
		c.Offsets[r+1] = e
	}
}

// AppendFrom appends row r of src, a column of c's type, to c: a gather from a column of
// distinct values (a replay's group keys, decoded once each) into output rows that repeat
// them, without boxing each value on the way.
func (c *Column) AppendFrom(src *Column, r int) { c.appendFrom(src, r) }

// appendFrom copies row r of src (same type) onto c.
func (c *Column) appendFrom(src *Column, r int) {
	if src.IsNull(r) {
		c.AppendNull()
		return
	}
	switch c.Kind {
	case KindNull:
		c.AppendNull()
	case KindInt64:
		c.AppendInt64(src.Int64[r])
	case KindInt32:
		c.AppendInt32(src.Int32[r])
	case KindFloat64:
		c.AppendFloat64(src.Float64[r])
	case KindFloat32:
		c.AppendFloat32(src.Float32[r])
	case KindBool:
		c.AppendBool(src.Bool[r])
	case KindDecimal:
		c.AppendDecimal(src.Decimal[r])
	case KindBytes:
		c.AppendBytes(src.BytesAt(r))
	case KindStruct:
		for k, ch := range c.Children {
			ch.appendFrom(src.Children[k], r)
		}
		c.AppendStruct()
	case KindList, KindMap:
		s, e := src.ListRange(r)
		for j := s; j < e; j++ {
			for k, ch := range c.Children {
				ch.appendFrom(src.Children[k], j)
			}
		}
		c.AppendList()
	}
}

// Grow reserves room for n more rows (and dataBytes more bytes of string data) so that the
// appends that follow do not reallocate.
func (c *Column) Grow(n, dataBytes int) {
	switch c.Kind {
	case KindInt64:
		c.Int64 = slices.Grow(c.Int64, n)
	case KindInt32:
		c.Int32 = slices.Grow(c.Int32, n)
	case KindFloat64:
		c.Float64 = slices.Grow(c.Float64, n)
	case KindFloat32:
		c.Float32 = slices.Grow(c.Float32, n)
	case KindBool:
		c.Bool = slices.Grow(c.Bool, n)
	case KindDecimal:
		c.Decimal = slices.Grow(c.Decimal, n)
	case KindBytes:
		c.Offsets = slices.Grow(c.Offsets, n)
		c.Data = slices.Grow(c.Data, dataBytes)
	case KindList, KindMap:
		c.Offsets = slices.Grow(c.Offsets, n)
	case KindStruct:
		for _, ch := range c.Children {
			ch.Grow(n, 0)
		}
	}
}
