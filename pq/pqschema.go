package pq

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/medallion-lake/medallion/txlog"
)

// orderedGroup is a Parquet group whose fields keep the Delta schema's order: parquet.Group
// is a map and would sort them by name.
type orderedGroup struct {
	fields []parquet.Field
	typ    parquet.Type // nil for a plain group; the LIST or MAP logical type otherwise
}

func (g *orderedGroup) ID() int        { return 0 }
func (g *orderedGroup) String() string { return "group" }
func (g *orderedGroup) Optional() bool { return false }
func (g *orderedGroup) Repeated() bool { return false }
func (g *orderedGroup) Required() bool { return true }
func (g *orderedGroup) Leaf() bool     { return false }
func (g *orderedGroup) Fields() []parquet.Field {
	return g.fields
}
func (g *orderedGroup) Encoding() encoding.Encoding { return nil }
func (g *orderedGroup) Compression() compress.Codec { return nil }
func (g *orderedGroup) GoType() reflect.Type {
	return reflect.TypeOf(map[string]any{})
}
func (g *orderedGroup) Type() parquet.Type {
	if g.typ != nil {
		return g.typ
	}
	return parquet.Group{}.Type()
}

type namedField struct {
	parquet.Node
	name string
}

func (f namedField) Name() string                           { return f.name }
func (f namedField) Value(base reflect.Value) reflect.Value { return reflect.Value{} }

var (
	listLogical = parquet.List(parquet.Leaf(parquet.Int32Type)).Type()
	mapLogical  = parquet.Map(parquet.String(), parquet.String()).Type()
)

// ParquetSchema maps a Delta schema to the Parquet schema our writer produces: field names are
// the column-mapping physical names, field ids are set under column mapping, types follow
// delta-protocol.md §4 (timestamp INT64 TIMESTAMP(MICROS, UTC), timestamp_ntz not adjusted,
// decimals as FIXED_LEN_BYTE_ARRAY, standard 3-level lists and maps).
func ParquetSchema(s *txlog.StructType) (*parquet.Schema, error) {
	return parquetSchema(s, nil, nil)
}

// parquetSchema is ParquetSchema with PLAIN encoding forced on the top-level columns in
// plain (string columns whose values are mostly distinct: a dictionary would only cost) and
// a dictionary on the integer columns in dict (a top-level integer column, or each integer
// field of a top-level struct: few distinct values, as gold's windows and counts).
func parquetSchema(s *txlog.StructType, plain, dict map[int]bool) (*parquet.Schema, error) {
	g, err := groupNode(s, plain, dict)
	if err != nil {
		return nil, err
	}
	return parquet.NewSchema("spark_schema", g), nil
}

func groupNode(s *txlog.StructType, plain, dict map[int]bool) (*orderedGroup, error) {
	g := &orderedGroup{}
	for i, f := range s.Fields {
		n, err := fieldNode(f.Type, f.Nullable)
		if st, ok := f.Type.(*txlog.StructType); ok && dict[i] && err == nil {
			n, err = dictStructNode(st, f.Nullable)
		}
		if err != nil {
			return nil, fmt.Errorf("table: column %s: %w", f.Name, err)
		}
		if plain[i] {
			n = plainNode(n, f.Nullable)
		}
		if dict[i] {
			n = dictNode(n, f.Nullable)
		}
		if raw, ok := f.Metadata["delta.columnMapping.id"]; ok {
			if id, err := strconv.Atoi(string(raw)); err == nil {
				n = parquet.FieldID(n, id)
			}
		}
		g.fields = append(g.fields, namedField{Node: n, name: f.PhysicalName()})
	}
	return g, nil
}

// decimalBytes is the smallest FIXED_LEN_BYTE_ARRAY length holding precision p (Spark's table).
func decimalBytes(p int) int {
	n := 1
	for {
		// the largest positive value of n bytes is 2^(8n-1)-1 >= 10^p - 1
		if float64(8*n-1)*0.30102999566398 >= float64(p) {
			return n
		}
		n++
	}
}

func fieldNode(t txlog.DataType, nullable bool) (parquet.Node, error) {
	var n parquet.Node
	switch v := t.(type) {
	case txlog.PrimitiveType:
		switch v.Name {
		case txlog.TypeString:
			n = parquet.String()
		case txlog.TypeBinary:
			n = parquet.Leaf(parquet.ByteArrayType)
		case txlog.TypeLong:
			n = parquet.Int(64)
		case txlog.TypeInteger:
			n = parquet.Int(32)
		case txlog.TypeShort:
			n = parquet.Int(16)
		case txlog.TypeByte:
			n = parquet.Int(8)
		case txlog.TypeDouble:
			n = parquet.Leaf(parquet.DoubleType)
		case txlog.TypeFloat:
			n = parquet.Leaf(parquet.FloatType)
		case txlog.TypeBoolean:
			n = parquet.Leaf(parquet.BooleanType)
		case txlog.TypeDate:
			n = parquet.Date()
		case txlog.TypeTimestamp:
			n = parquet.TimestampAdjusted(parquet.Microsecond, true)
		case txlog.TypeTimestampNTZ:
			n = parquet.TimestampAdjusted(parquet.Microsecond, false)
		default:
			return nil, fmt.Errorf("type %s cannot be stored in Parquet", v.Name)
		}
	case txlog.DecimalType:
		n = parquet.Decimal(v.Scale, v.Precision, parquet.FixedLenByteArrayType(decimalBytes(v.Precision)))
	case *txlog.StructType:
		g, err := groupNode(v, nil, nil)
		if err != nil {
			return nil, err
		}
		n = g
	case txlog.ArrayType:
		el, err := fieldNode(v.ElementType, v.ContainsNull)
		if err != nil {
			return nil, err
		}
		inner := &orderedGroup{fields: []parquet.Field{namedField{Node: el, name: "element"}}}
		n = &orderedGroup{typ: listLogical, fields: []parquet.Field{namedField{Node: parquet.Repeated(inner), name: "list"}}}
	case txlog.MapType:
		k, err := fieldNode(v.KeyType, false)
		if err != nil {
			return nil, err
		}
		val, err := fieldNode(v.ValueType, v.ValueContainsNull)
		if err != nil {
			return nil, err
		}
		kv := &orderedGroup{fields: []parquet.Field{namedField{Node: k, name: "key"}, namedField{Node: val, name: "value"}}}
		n = &orderedGroup{typ: mapLogical, fields: []parquet.Field{namedField{Node: parquet.Repeated(kv), name: "key_value"}}}
	default:
		return nil, fmt.Errorf("unsupported type %s", t.TypeName())
	}
	if nullable {
		return parquet.Optional(n), nil
	}
	return parquet.Required(n), nil
}

// fieldID returns the column-mapping id of a field, or 0.
func fieldID(f *txlog.StructField) int {
	raw, ok := f.Metadata["delta.columnMapping.id"]
	if !ok {
		return 0
	}
	var id int
	if json.Unmarshal(raw, &id) != nil {
		return 0
	}
	return id
}

// dictNode re-wraps an integer leaf with RLE_DICTIONARY encoding, keeping its repetition:
// parquet-go writes integers PLAIN unless told. Other nodes are returned as they are.
func dictNode(n parquet.Node, nullable bool) parquet.Node {
	if !n.Leaf() {
		return n
	}
	switch n.Type().Kind() {
	case parquet.Int32, parquet.Int64:
	default:
		return n
	}
	leaf := parquet.Encoded(parquet.Leaf(n.Type()), &parquet.RLEDictionary)
	if nullable {
		return parquet.Optional(leaf)
	}
	return parquet.Required(leaf)
}

// dictStructNode is the node of a struct whose integer fields are dictionary-encoded.
func dictStructNode(st *txlog.StructType, nullable bool) (parquet.Node, error) {
	all := make(map[int]bool, len(st.Fields))
	for i := range st.Fields {
		all[i] = true
	}
	g, err := groupNode(st, nil, all)
	if err != nil {
		return nil, err
	}
	if nullable {
		return parquet.Optional(g), nil
	}
	return parquet.Required(g), nil
}

// plainNode re-wraps a leaf with PLAIN encoding, keeping its repetition.
func plainNode(n parquet.Node, nullable bool) parquet.Node {
	if !n.Leaf() {
		return n
	}
	leaf := parquet.Encoded(parquet.Leaf(n.Type()), &parquet.Plain)
	if nullable {
		return parquet.Optional(leaf)
	}
	return parquet.Required(leaf)
}
