package pq

import (
	"fmt"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/txlog"
)

// DefaultBloomFilterBitsPerValue sizes the bloom filters of WriteOptions.BloomFilterColumns
// unless BloomFilterBitsPerValue says otherwise: 10 bits per value gives a split-block filter
// about a 1% false-positive rate (parquet-go's advice and the usual choice of Spark users), for
// 1.25 bytes per row of each filtered column; the filter of a 1M-row group is about 1.2 MiB.
// A caller that probes many keys at once wants more bits: a file is skipped only when every
// key is ruled out.
const DefaultBloomFilterBitsPerValue = 10

// bloomPlan is the bloom filter configuration of one file encoder.
type bloomPlan struct {
	filters []parquet.BloomFilterColumn
	bytes   []int // indexes of the filtered top-level byte-array columns
}

// planBloomFilters resolves WriteOptions.BloomFilterColumns against the file schema.
func planBloomFilters(schema *txlog.StructType, names []string, bitsPerValue uint) (*bloomPlan, error) {
	if bitsPerValue == 0 {
		bitsPerValue = DefaultBloomFilterBitsPerValue
	}
	p := &bloomPlan{}
	for _, name := range names {
		i := FieldIndexFold(schema, name)
		if i < 0 {
			return nil, fmt.Errorf("table: bloom filter column %s is not a column of the data files (unknown, or a partition column)", name)
		}
		f := &schema.Fields[i]
		k, err := KindOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("table: bloom filter column %s: %w", name, err)
		}
		switch k {
		case KindStruct, KindList, KindMap, KindNull:
			return nil, fmt.Errorf("table: bloom filter column %s has type %s; only primitive columns can have a bloom filter", name, TypeString(f.Type))
		case KindBytes:
			p.bytes = append(p.bytes, i)
		}
		p.filters = append(p.filters, parquet.SplitBlockFilter(bitsPerValue, f.PhysicalName()))
	}
	return p, nil
}

// forcePlain turns off the dictionary of filtered string columns. parquet-go (v0.32.0) fills
// the filter of a dictionary-encoded chunk from the dictionary alone, so when the dictionary
// outgrows DictionaryMaxBytes and the writer falls back to PLAIN pages, the values of those
// pages are missing from the filter: a false negative, which would make a look-up miss a key.
// Filtered columns are key columns, mostly distinct values, which get PLAIN anyway.
func (p *bloomPlan) forcePlain(plain map[int]bool) {
	for _, i := range p.bytes {
		plain[i] = true
	}
}

// option is the writer option that makes parquet-go build the filters. Its low-level path
// (ColumnWriter.WriteRowValues, as the encoder uses) does not know the value count up front,
// so at each row group flush parquet-go decodes the chunk's pages back and hashes their values
// into a filter sized for the chunk's value count.
func (p *bloomPlan) option() parquet.WriterOption {
	return parquet.BloomFilters(p.filters...)
}

func FieldIndexFold(s *txlog.StructType, name string) int {
	if i := s.FieldIndex(name); i >= 0 {
		return i
	}
	for i := range s.Fields {
		if strings.EqualFold(s.Fields[i].Name, name) {
			return i
		}
	}
	return -1
}
