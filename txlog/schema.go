package txlog

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DataType is a Delta (Spark) data type as it appears in schemaString.
type DataType interface {
	// TypeName is the JSON name: "long", "decimal(10,2)", "struct", "array", "map", ...
	TypeName() string
}

// Primitive type names as Delta writes them.
const (
	TypeString       = "string"
	TypeLong         = "long"
	TypeInteger      = "integer"
	TypeShort        = "short"
	TypeByte         = "byte"
	TypeFloat        = "float"
	TypeDouble       = "double"
	TypeBoolean      = "boolean"
	TypeBinary       = "binary"
	TypeDate         = "date"
	TypeTimestamp    = "timestamp"
	TypeTimestampNTZ = "timestamp_ntz"
	TypeVoid         = "void"
	// TypeVariant is semi-structured data (readerFeatures variantType), stored in Parquet as
	// a group of two binaries, metadata and value.
	TypeVariant = "variant"
)

// PrimitiveType is every non-nested, non-decimal type.
type PrimitiveType struct{ Name string }

// TypeName implements DataType.
func (p PrimitiveType) TypeName() string { return p.Name }

// DecimalType is decimal(precision, scale).
type DecimalType struct{ Precision, Scale int }

// TypeName implements DataType.
func (d DecimalType) TypeName() string { return fmt.Sprintf("decimal(%d,%d)", d.Precision, d.Scale) }

// ArrayType is array<element>.
type ArrayType struct {
	ElementType  DataType
	ContainsNull bool
}

// TypeName implements DataType.
func (ArrayType) TypeName() string { return "array" }

// MapType is map<key, value>.
type MapType struct {
	KeyType           DataType
	ValueType         DataType
	ValueContainsNull bool
}

// TypeName implements DataType.
func (MapType) TypeName() string { return "map" }

// StructField is one named field of a struct. Metadata keeps every key as raw JSON so that
// unknown keys survive a rewrite of the metadata.
type StructField struct {
	Name     string
	Type     DataType
	Nullable bool
	Metadata map[string]json.RawMessage
}

// StructType is a struct, and the type of a whole table schema.
type StructType struct{ Fields []StructField }

// TypeName implements DataType.
func (*StructType) TypeName() string { return "struct" }

// Field returns the field with the given name (exact match), or nil.
func (s *StructType) Field(name string) *StructField {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// FieldIndex returns the index of the named field, or -1.
func (s *StructType) FieldIndex(name string) int {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return i
		}
	}
	return -1
}

// PhysicalName returns the column-mapping physical name of the field, or its logical name
// when the field has none.
func (f *StructField) PhysicalName() string {
	if raw, ok := f.Metadata["delta.columnMapping.physicalName"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return f.Name
}

var decimalRE = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$`)

var primitiveNames = map[string]bool{
	TypeString: true, TypeLong: true, TypeInteger: true, TypeShort: true, TypeByte: true,
	TypeFloat: true, TypeDouble: true, TypeBoolean: true, TypeBinary: true, TypeDate: true,
	TypeTimestamp: true, TypeTimestampNTZ: true, TypeVoid: true, TypeVariant: true,
}

// ParseSchema parses a schemaString into a StructType.
func ParseSchema(schemaString string) (*StructType, error) {
	t, err := parseType(json.RawMessage(schemaString))
	if err != nil {
		return nil, fmt.Errorf("txlog: parse schema: %w", err)
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("txlog: parse schema: top level is %s, not struct", t.TypeName())
	}
	return st, nil
}

// MarshalSchema renders a StructType as Spark's schema JSON (the schemaString form).
func MarshalSchema(s *StructType) (string, error) {
	b, err := json.Marshal(typeJSON(s))
	if err != nil {
		return "", fmt.Errorf("txlog: marshal schema: %w", err)
	}
	return string(b), nil
}

func parseType(raw json.RawMessage) (DataType, error) {
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		if primitiveNames[name] {
			return PrimitiveType{Name: name}, nil
		}
		if m := decimalRE.FindStringSubmatch(name); m != nil {
			p, _ := strconv.Atoi(m[1])
			s, _ := strconv.Atoi(m[2])
			if p < 1 || p > 38 || s > p {
				return nil, fmt.Errorf("invalid %s: precision must be 1..38 and scale <= precision", name)
			}
			return DecimalType{Precision: p, Scale: s}, nil
		}
		if name == "decimal" {
			return DecimalType{Precision: 10, Scale: 0}, nil
		}
		return nil, fmt.Errorf("unsupported data type %q", name)
	}
	var obj struct {
		Type              string            `json:"type"`
		Fields            []json.RawMessage `json:"fields"`
		ElementType       json.RawMessage   `json:"elementType"`
		ContainsNull      *bool             `json:"containsNull"`
		KeyType           json.RawMessage   `json:"keyType"`
		ValueType         json.RawMessage   `json:"valueType"`
		ValueContainsNull *bool             `json:"valueContainsNull"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("data type is neither a name nor an object: %w", err)
	}
	switch obj.Type {
	case "struct":
		st := &StructType{Fields: make([]StructField, 0, len(obj.Fields))}
		seen := map[string]bool{}
		for _, fraw := range obj.Fields {
			var f struct {
				Name     *string                    `json:"name"`
				Type     json.RawMessage            `json:"type"`
				Nullable *bool                      `json:"nullable"`
				Metadata map[string]json.RawMessage `json:"metadata"`
			}
			if err := json.Unmarshal(fraw, &f); err != nil {
				return nil, fmt.Errorf("struct field: %w", err)
			}
			if f.Name == nil {
				return nil, fmt.Errorf("struct field without a name")
			}
			ft, err := parseType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", *f.Name, err)
			}
			lower := strings.ToLower(*f.Name)
			if seen[lower] {
				return nil, fmt.Errorf("duplicate field name %q (names are unique ignoring case)", *f.Name)
			}
			seen[lower] = true
			nullable := true
			if f.Nullable != nil {
				nullable = *f.Nullable
			}
			st.Fields = append(st.Fields, StructField{Name: *f.Name, Type: ft, Nullable: nullable, Metadata: f.Metadata})
		}
		return st, nil
	case "array":
		et, err := parseType(obj.ElementType)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		return ArrayType{ElementType: et, ContainsNull: obj.ContainsNull == nil || *obj.ContainsNull}, nil
	case "map":
		kt, err := parseType(obj.KeyType)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		vt, err := parseType(obj.ValueType)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		return MapType{KeyType: kt, ValueType: vt, ValueContainsNull: obj.ValueContainsNull == nil || *obj.ValueContainsNull}, nil
	default:
		return nil, fmt.Errorf("unsupported data type %q", obj.Type)
	}
}

// typeJSON builds the JSON value of a type with Spark's key order.
func typeJSON(t DataType) any {
	switch v := t.(type) {
	case *StructType:
		fields := make([]orderedField, len(v.Fields))
		for i, f := range v.Fields {
			md := f.Metadata
			if md == nil {
				md = map[string]json.RawMessage{}
			}
			fields[i] = orderedField{Name: f.Name, Type: typeJSON(f.Type), Nullable: f.Nullable, Metadata: md}
		}
		return struct {
			Type   string         `json:"type"`
			Fields []orderedField `json:"fields"`
		}{"struct", fields}
	case ArrayType:
		return struct {
			Type         string `json:"type"`
			ElementType  any    `json:"elementType"`
			ContainsNull bool   `json:"containsNull"`
		}{"array", typeJSON(v.ElementType), v.ContainsNull}
	case MapType:
		return struct {
			Type              string `json:"type"`
			KeyType           any    `json:"keyType"`
			ValueType         any    `json:"valueType"`
			ValueContainsNull bool   `json:"valueContainsNull"`
		}{"map", typeJSON(v.KeyType), typeJSON(v.ValueType), v.ValueContainsNull}
	default:
		return t.TypeName()
	}
}

type orderedField struct {
	Name     string                     `json:"name"`
	Type     any                        `json:"type"`
	Nullable bool                       `json:"nullable"`
	Metadata map[string]json.RawMessage `json:"metadata"`
}
