package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// dump accumulates the batches of one read path in the raw format of the package comment.
type dump struct {
	path    string
	schema  *txlog.StructType
	cols    []*acc
	batches []int
	n       int
}

// acc is one column's rows so far: its own copy, never memory of a batch.
type acc struct {
	name     string
	typ      txlog.DataType
	kind     pq.Kind
	n        int
	valid    []byte
	values   []byte
	offsets  []int32
	data     []byte
	children []*acc
}

func newDump(path string, schema *txlog.StructType) (*dump, error) {
	d := &dump{path: path, schema: schema}
	for _, f := range schema.Fields {
		a, err := newAcc(f.Name, f.Type)
		if err != nil {
			return nil, err
		}
		d.cols = append(d.cols, a)
	}
	return d, nil
}

func newAcc(name string, t txlog.DataType) (*acc, error) {
	k, err := pq.KindOf(t)
	if err != nil {
		return nil, err
	}
	a := &acc{name: name, typ: t, kind: k}
	if k == pq.KindBytes || k == pq.KindList || k == pq.KindMap {
		a.offsets = []int32{0}
	}
	var kids []txlog.StructField
	switch v := t.(type) {
	case *txlog.StructType:
		kids = v.Fields
	case txlog.ArrayType:
		kids = []txlog.StructField{{Name: "element", Type: v.ElementType}}
	case txlog.MapType:
		kids = []txlog.StructField{{Name: "key", Type: v.KeyType}, {Name: "value", Type: v.ValueType}}
	}
	for _, f := range kids {
		ch, err := newAcc(f.Name, f.Type)
		if err != nil {
			return nil, err
		}
		a.children = append(a.children, ch)
	}
	return a, nil
}

func (d *dump) add(b *pq.Batch) error {
	n := b.Len()
	for i, a := range d.cols {
		if err := a.add(b.Columns[i]); err != nil {
			return fmt.Errorf("column %s: %w", a.name, err)
		}
		if a.n != d.n+n {
			return fmt.Errorf("column %s: %d rows after the batch, want %d", a.name, a.n, d.n+n)
		}
	}
	d.batches = append(d.batches, n)
	d.n += n
	return nil
}

// asBytes views a slice of fixed-width numbers as its little-endian bytes (checked in run).
func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// add appends every row of c (c.Len rows) to a.
func (a *acc) add(c *pq.Column) error {
	n := c.Len
	if c.Kind != a.kind {
		return fmt.Errorf("kind %d, want %d", c.Kind, a.kind)
	}
	if len(c.Nulls) == 0 {
		for range n {
			a.valid = append(a.valid, 1)
		}
	} else {
		for _, null := range c.Nulls[:n] {
			if null {
				a.valid = append(a.valid, 0)
			} else {
				a.valid = append(a.valid, 1)
			}
		}
	}
	switch c.Kind {
	case pq.KindInt64:
		a.values = append(a.values, asBytes(c.Int64[:n])...)
	case pq.KindInt32:
		a.values = append(a.values, asBytes(c.Int32[:n])...)
	case pq.KindFloat64:
		a.values = append(a.values, asBytes(c.Float64[:n])...)
	case pq.KindFloat32:
		a.values = append(a.values, asBytes(c.Float32[:n])...)
	case pq.KindBool:
		for _, v := range c.Bool[:n] {
			if v {
				a.values = append(a.values, 1)
			} else {
				a.values = append(a.values, 0)
			}
		}
	case pq.KindDecimal:
		for _, v := range c.Decimal[:n] {
			a.values = append(a.values, asBytes([]uint64{v.Lo, uint64(v.Hi)})...)
		}
	case pq.KindBytes:
		lo, hi := c.Offsets[0], c.Offsets[n]
		if int64(len(a.data))+int64(hi-lo) > math.MaxInt32 {
			return fmt.Errorf("more than 2 GiB of string data: raise the dump's offsets to int64")
		}
		base := int32(len(a.data)) - lo
		a.data = append(a.data, c.Data[lo:hi]...)
		for _, o := range c.Offsets[1 : n+1] {
			a.offsets = append(a.offsets, base+o)
		}
	case pq.KindList, pq.KindMap:
		lo, hi := int(c.Offsets[0]), int(c.Offsets[n])
		if lo != 0 {
			return fmt.Errorf("offsets start at %d", lo)
		}
		base := int32(a.children[0].n)
		for _, o := range c.Offsets[1 : n+1] {
			a.offsets = append(a.offsets, base+o)
		}
		for k, ch := range a.children {
			if c.Children[k].Len != hi {
				return fmt.Errorf("child %d has %d rows, offsets end at %d", k, c.Children[k].Len, hi)
			}
			if err := ch.add(c.Children[k]); err != nil {
				return fmt.Errorf("%s: %w", ch.name, err)
			}
		}
	case pq.KindStruct:
		for k, ch := range a.children {
			if err := ch.add(c.Children[k]); err != nil {
				return fmt.Errorf("%s: %w", ch.name, err)
			}
		}
	}
	a.n += n
	return nil
}

// sameAs reports the first column where two dumps differ (null rows compared by validity only).
func (d *dump) sameAs(o *dump) error {
	if d.n != o.n || fmt.Sprint(d.batches) != fmt.Sprint(o.batches) {
		return fmt.Errorf("batches %v, then %v", d.batches, o.batches)
	}
	for i, a := range d.cols {
		if err := a.sameAs(o.cols[i]); err != nil {
			return fmt.Errorf("column %s: %w", a.name, err)
		}
	}
	return nil
}

func (a *acc) sameAs(o *acc) error {
	if a.n != o.n || !bytes.Equal(a.valid, o.valid) {
		return fmt.Errorf("rows or nulls differ")
	}
	if a.kind != pq.KindStruct && a.kind != pq.KindList && a.kind != pq.KindMap {
		if w := width(a.kind); w > 0 {
			for i := 0; i < a.n; i++ {
				if a.valid[i] == 1 && !bytes.Equal(a.values[i*w:(i+1)*w], o.values[i*w:(i+1)*w]) {
					return fmt.Errorf("row %d differs", i)
				}
			}
		}
	}
	if a.kind == pq.KindBytes || a.kind == pq.KindList || a.kind == pq.KindMap {
		for i := 0; i < a.n; i++ {
			la, lb := a.offsets[i+1]-a.offsets[i], o.offsets[i+1]-o.offsets[i]
			if a.valid[i] == 1 && la != lb {
				return fmt.Errorf("row %d has %d entries, then %d", i, la, lb)
			}
			if a.kind == pq.KindBytes && a.valid[i] == 1 &&
				!bytes.Equal(a.data[a.offsets[i]:a.offsets[i+1]], o.data[o.offsets[i]:o.offsets[i+1]]) {
				return fmt.Errorf("row %d differs", i)
			}
		}
		if a.kind != pq.KindBytes && !bytes.Equal(asBytes(a.offsets), asBytes(o.offsets)) {
			return fmt.Errorf("list offsets differ")
		}
	}
	for k, ch := range a.children {
		if err := ch.sameAs(o.children[k]); err != nil {
			return fmt.Errorf("%s: %w", ch.name, err)
		}
	}
	return nil
}

func width(k pq.Kind) int {
	switch k {
	case pq.KindInt64, pq.KindFloat64:
		return 8
	case pq.KindInt32, pq.KindFloat32:
		return 4
	case pq.KindBool:
		return 1
	case pq.KindDecimal:
		return 16
	}
	return 0
}

var kindNames = map[pq.Kind]string{
	pq.KindNull: "null", pq.KindInt64: "int64", pq.KindInt32: "int32",
	pq.KindFloat64: "float64", pq.KindFloat32: "float32", pq.KindBool: "bool",
	pq.KindBytes: "bytes", pq.KindDecimal: "decimal", pq.KindStruct: "struct",
	pq.KindList: "list", pq.KindMap: "map",
}

type colManifest struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Kind     string          `json:"kind"`
	Rows     int             `json:"rows"`
	Prefix   string          `json:"prefix"`
	Children []colManifest   `json:"children,omitempty"`
}

type manifest struct {
	Path    string        `json:"path"`
	Rows    int           `json:"rows"`
	Batches []int         `json:"batches"`
	Columns []colManifest `json:"columns"`
}

// write stores the dump in dir (created; files of an earlier dump there are replaced).
func (d *dump) write(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m := manifest{Path: d.path, Rows: d.n, Batches: d.batches}
	if m.Batches == nil {
		m.Batches = []int{}
	}
	for i, a := range d.cols {
		cm, err := a.write(dir, "c"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		m.Columns = append(m.Columns, cm)
	}
	js, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), js, 0o644)
}

func (a *acc) write(dir, prefix string) (colManifest, error) {
	typ, err := typeJSON(a.typ)
	if err != nil {
		return colManifest{}, err
	}
	cm := colManifest{Name: a.name, Type: typ, Kind: kindNames[a.kind], Rows: a.n, Prefix: prefix}
	files := map[string][]byte{".valid": a.valid}
	if width(a.kind) > 0 {
		files[".values"] = a.values
	}
	if a.offsets != nil {
		files[".offsets"] = asBytes(a.offsets)
	}
	if a.kind == pq.KindBytes {
		files[".data"] = a.data
	}
	for ext, b := range files {
		if err := os.WriteFile(filepath.Join(dir, prefix+ext), b, 0o644); err != nil {
			return colManifest{}, err
		}
	}
	for k, ch := range a.children {
		sub, err := ch.write(dir, prefix+"."+strconv.Itoa(k))
		if err != nil {
			return colManifest{}, err
		}
		cm.Children = append(cm.Children, sub)
	}
	return cm, nil
}

// typeJSON renders a Delta type as it appears in a schema's JSON.
func typeJSON(t txlog.DataType) (json.RawMessage, error) {
	s := &txlog.StructType{Fields: []txlog.StructField{{Name: "x", Type: t, Nullable: true}}}
	text, err := txlog.MarshalSchema(s)
	js := []byte(text)
	if err != nil {
		return nil, err
	}
	var v struct {
		Fields []struct {
			Type json.RawMessage `json:"type"`
		} `json:"fields"`
	}
	if err := json.Unmarshal(js, &v); err != nil || len(v.Fields) != 1 {
		return nil, fmt.Errorf("pqread: cannot render type %s as JSON: %v", t.TypeName(), err)
	}
	return v.Fields[0].Type, nil
}
