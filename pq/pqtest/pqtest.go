// Package pqtest makes batches, schemas and write options for the tests of package pq and of
// the packages built on it (sqlexpr, table, the interop tools): the all-types batch and the
// event batch of the benchmarks, the value checks and byte-level encoders (compact Thrift, level
// bit widths) of the decoder tests (helpers.go), and randomized batches for differential tests of
// pq's Parquet writer and readers: the shapes that real pipelines produce and that hide reader
// bugs when they are rare (a column that is null for a whole page after a few values, a
// dictionary that overflows into plain pages, a row group of one row, runs that straddle page
// boundaries). It imports pq alone, so pq's own tests that use it are external (package
// pq_test). It owns no state and writes nothing.
package pqtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// NullPattern is how the null rows of a nullable column are laid out.
type NullPattern int

// The null patterns RandomBatch draws from.
const (
	AllPresent NullPattern = iota
	AllNull
	// Runs alternates runs of nulls and of values, with geometric lengths whose mean is
	// drawn per column between a few rows and more than a page.
	Runs
	// Isolated makes rare present values in a sea of nulls.
	Isolated
	// Sparse makes rare nulls among values.
	Sparse
	// FewThenNull is the shape of issue 25: a few present values, then a stretch of nulls
	// longer than a page, then values again.
	FewThenNull
	numNullPatterns
)

func (p NullPattern) String() string {
	return [...]string{"all-present", "all-null", "runs", "isolated", "sparse", "few-then-null"}[p]
}

// Cardinality is how many distinct values a column draws from, which decides between
// dictionary pages, plain pages and a dictionary that falls back to plain mid-chunk.
type Cardinality int

// The cardinalities RandomBatch draws from.
const (
	Low Cardinality = iota
	Medium
	Unique
	numCardinalities
)

func (c Cardinality) String() string { return [...]string{"low", "medium", "unique"}[c] }

// Shape is the randomized layout of one column.
type Shape struct {
	Nulls       NullPattern
	Cardinality Cardinality
	// MeanRun is the mean run length of the Runs pattern, and the length of the null
	// stretch of FewThenNull.
	MeanRun int
}

func (s Shape) String() string {
	return fmt.Sprintf("%s/%s/run=%d", s.Nulls, s.Cardinality, s.MeanRun)
}

// primitives are the leaf types a random schema draws from: every primitive Delta type that
// package pq maps, and decimals of each physical width.
var primitives = func() []txlog.DataType {
	var ts []txlog.DataType
	for _, name := range []string{
		txlog.TypeLong, txlog.TypeInteger, txlog.TypeShort, txlog.TypeByte, txlog.TypeDouble,
		txlog.TypeFloat, txlog.TypeBoolean, txlog.TypeString, txlog.TypeBinary, txlog.TypeDate,
		txlog.TypeTimestamp, txlog.TypeTimestampNTZ,
	} {
		ts = append(ts, txlog.PrimitiveType{Name: name})
	}
	return append(ts,
		txlog.DecimalType{Precision: 9, Scale: 2},
		txlog.DecimalType{Precision: 18, Scale: 4},
		txlog.DecimalType{Precision: 38, Scale: 10})
}()

// Primitives returns every primitive type RandomSchema may draw.
func Primitives() []txlog.DataType { return append([]txlog.DataType(nil), primitives...) }

// RandomSchema returns a schema with every primitive type (nullable, except one required long
// "id"; strings thrice more) and, when nested is set, a struct, a list and a map column, in a
// random order after "id".
func RandomSchema(r *rand.Rand, nested bool) *txlog.StructType {
	s := &txlog.StructType{}
	s.Fields = append(s.Fields, txlog.StructField{Name: "id", Type: txlog.PrimitiveType{Name: txlog.TypeLong}})
	for i, t := range primitives {
		s.Fields = append(s.Fields, txlog.StructField{Name: fmt.Sprintf("c%02d_%s", i, sanitize(t.TypeName())), Type: t, Nullable: true})
	}
	// Strings and binaries get dictionary pages from our writer; these always have a
	// dictionary and long stretches of nulls (see RandomBatch).
	for i := range 3 {
		s.Fields = append(s.Fields, txlog.StructField{Name: fmt.Sprintf("%s%d", sparseDictPrefix, i), Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true})
	}
	if nested {
		s.Fields = append(s.Fields,
			txlog.StructField{Name: "st", Nullable: true, Type: &txlog.StructType{Fields: []txlog.StructField{
				{Name: "a", Type: txlog.PrimitiveType{Name: txlog.TypeInteger}, Nullable: true},
				{Name: "b", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
			}}},
			txlog.StructField{Name: "li", Nullable: true, Type: txlog.ArrayType{
				ElementType: txlog.PrimitiveType{Name: txlog.TypeLong}, ContainsNull: true}},
			txlog.StructField{Name: "mp", Nullable: true, Type: txlog.MapType{
				KeyType: txlog.PrimitiveType{Name: txlog.TypeString}, ValueType: txlog.PrimitiveType{Name: txlog.TypeInteger}, ValueContainsNull: true}},
		)
	}
	r.Shuffle(len(s.Fields)-1, func(i, j int) { s.Fields[i+1], s.Fields[j+1] = s.Fields[j+1], s.Fields[i+1] })
	return s
}

func sanitize(s string) string {
	out := []byte{}
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			out = append(out, c)
		} else if c == '_' || c == ',' {
			out = append(out, '_')
		}
	}
	return string(out)
}

// sparseDictPrefix names the string columns that RandomBatch always makes sparse and
// dictionary-encoded.
const sparseDictPrefix = "sparse_dict_"

// RandomShape draws a column layout.
func RandomShape(r *rand.Rand) Shape {
	runs := []int{1, 3, 50, 700, 5000, 40000, 120000}
	return Shape{
		Nulls:       NullPattern(r.IntN(int(numNullPatterns))),
		Cardinality: Cardinality(r.IntN(int(numCardinalities))),
		MeanRun:     runs[r.IntN(len(runs))],
	}
}

// RandomBatch returns rows rows of schema, each top-level column with a shape of its own
// (returned in schema order). Row i of the required "id" column, if any, is i.
func RandomBatch(r *rand.Rand, schema *txlog.StructType, rows int) (*pq.Batch, []Shape, error) {
	b, err := pq.NewBatch(schema)
	if err != nil {
		return nil, nil, err
	}
	shapes := make([]Shape, len(schema.Fields))
	for c, f := range schema.Fields {
		sh := RandomShape(r)
		if strings.HasPrefix(f.Name, sparseDictPrefix) {
			// Dictionary pages that are null for a page or more: where issue 25 hid.
			sh.Nulls = []NullPattern{FewThenNull, Isolated, Runs}[r.IntN(3)]
			sh.Cardinality = Cardinality(r.IntN(int(Unique)))
		}
		if !f.Nullable {
			sh.Nulls = AllPresent
		}
		shapes[c] = sh
		present := presence(r, sh, rows)
		g := newGen(r, sh.Cardinality)
		col := b.Columns[c]
		for i := 0; i < rows; i++ {
			if f.Name == "id" {
				col.AppendInt64(int64(i))
				continue
			}
			if !present[i] {
				col.AppendNull()
				continue
			}
			if err := g.value(col, f.Type, 0); err != nil {
				return nil, nil, fmt.Errorf("tabletest: column %s: %w", f.Name, err)
			}
		}
	}
	return b, shapes, b.Validate()
}

// presence lays out which rows of a column hold a value.
func presence(r *rand.Rand, sh Shape, rows int) []bool {
	p := make([]bool, rows)
	switch sh.Nulls {
	case AllPresent:
		for i := range p {
			p[i] = true
		}
	case AllNull:
	case Runs:
		on := r.IntN(2) == 0
		for i := 0; i < rows; {
			n := 1 + int(r.ExpFloat64()*float64(sh.MeanRun))
			for k := i; k < min(i+n, rows); k++ {
				p[k] = on
			}
			i += n
			on = !on
		}
	case Isolated, Sparse:
		rate := []float64{1e-5, 1e-4, 1e-3, 1e-2}[r.IntN(4)]
		for i := range p {
			p[i] = (r.Float64() < rate) == (sh.Nulls == Isolated)
		}
	case FewThenNull:
		few := 1 + r.IntN(64)
		gap := max(sh.MeanRun, 60000)
		start := r.IntN(max(rows/4, 1))
		for i := range p {
			switch {
			case i < start:
				p[i] = r.IntN(1000) < 3 // the rare values that made the dictionary
			case i < start+few:
				p[i] = true
			case i < start+few+gap:
			default:
				p[i] = r.IntN(100) < 1
			}
		}
	}
	return p
}

// gen draws values of one column's cardinality.
type gen struct {
	r    *rand.Rand
	card Cardinality
	n    uint64
}

func newGen(r *rand.Rand, c Cardinality) *gen { return &gen{r: r, card: c} }

// pick returns a value index: from a handful, from thousands, or never repeated.
func (g *gen) pick() uint64 {
	switch g.card {
	case Low:
		return uint64(g.r.IntN(5))
	case Medium:
		return uint64(g.r.IntN(3000))
	}
	g.n++
	return g.n*0x9E3779B97F4A7C15 ^ uint64(g.r.Int64())
}

func (g *gen) value(col *pq.Column, t txlog.DataType, depth int) error {
	k := g.pick()
	switch v := t.(type) {
	case txlog.PrimitiveType:
		switch v.Name {
		case txlog.TypeLong:
			col.AppendInt64(int64(k) - 1<<40)
		case txlog.TypeInteger:
			col.AppendInt32(int32(k))
		case txlog.TypeShort:
			col.AppendInt32(int32(int16(k)))
		case txlog.TypeByte:
			col.AppendInt32(int32(int8(k)))
		case txlog.TypeDate:
			col.AppendInt32(int32(k%5_000_000) - 2_500_000) // years -4874 to 8814
		case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			col.AppendInt64(int64(k%(400*365*86400_000_000)) - 200*365*86400_000_000)
		case txlog.TypeDouble:
			specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64}
			if k%97 == 0 {
				col.AppendFloat64(specials[int(k/97)%len(specials)])
			} else {
				col.AppendFloat64(float64(int64(k%1_000_000_007)) / 7.0)
			}
		case txlog.TypeFloat:
			col.AppendFloat32(float32(int64(k%1_000_003)) / 3)
		case txlog.TypeBoolean:
			col.AppendBool(k%2 == 1)
		case txlog.TypeString:
			col.AppendString(g.text(k))
		case txlog.TypeBinary:
			col.AppendBytes(g.bytes(k))
		default:
			return fmt.Errorf("no generator for %s", v.Name)
		}
	case txlog.DecimalType:
		d := pq.DecimalFromInt64(int64(k % 1_000_000_000))
		if v.Precision > 18 && k%3 == 0 {
			d.Hi = int64(k % (1 << 40)) // beyond 64 bits, still within 38 digits
		}
		if k%2 == 0 {
			d = d.Neg()
		}
		col.AppendDecimal(d)
	case *txlog.StructType:
		for i, f := range v.Fields {
			if g.r.IntN(10) == 0 {
				col.Children[i].AppendNull()
			} else if err := g.value(col.Children[i], f.Type, depth+1); err != nil {
				return err
			}
		}
		col.AppendStruct()
	case txlog.ArrayType:
		for range g.r.IntN(4) {
			if g.r.IntN(8) == 0 {
				col.Children[0].AppendNull()
			} else if err := g.value(col.Children[0], v.ElementType, depth+1); err != nil {
				return err
			}
		}
		col.AppendList()
	case txlog.MapType:
		for i := range g.r.IntN(3) {
			col.Children[0].AppendString(fmt.Sprintf("k%d", i))
			if g.r.IntN(8) == 0 {
				col.Children[1].AppendNull()
			} else if err := g.value(col.Children[1], v.ValueType, depth+1); err != nil {
				return err
			}
		}
		col.AppendList()
	default:
		return fmt.Errorf("no generator for %s", t.TypeName())
	}
	return nil
}

var words = []string{"", "a", "device-0001", "é-ünïcödé", "日本語テキスト", "line\nbreak", "quote\"d"}

func (g *gen) text(k uint64) string {
	if g.card == Low {
		return words[k%uint64(len(words))]
	}
	return fmt.Sprintf("%s-%x", words[k%uint64(len(words))], k)
}

func (g *gen) bytes(k uint64) []byte {
	n := int(k % 40)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(k >> (i % 8 * 8))
	}
	return b
}

// maxRowGroups keeps a drawn layout under the 32,767 row groups a Parquet file can hold
// (parquet-go refuses to write more: a row group's ordinal is a 16-bit number).
const maxRowGroups = 32_000

// RandomWriteOptions draws the writer's knobs that change the page and row-group layout:
// row groups of one, a few or all rows, tiny to default page buffers, each codec.
func RandomWriteOptions(r *rand.Rand, rows int) pq.WriteOptions {
	least := max((rows+maxRowGroups-1)/maxRowGroups, 1)
	groups := []int{rows, max(rows/3, least), max(rows/7+r.IntN(100), least), max(1+r.IntN(5000), least)}
	pages := []int{0, 256, 1 << 10, 4 << 10, 64 << 10}
	codecs := []string{pq.CompressionSnappy, pq.CompressionZstd}
	return pq.WriteOptions{
		RowGroupRows:   groups[r.IntN(len(groups))],
		PageBufferSize: pages[r.IntN(len(pages))],
		Compression:    codecs[r.IntN(len(codecs))],
		StatsColumns:   -1,
	}
}
