package sink

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

// Header names of every published record.
const (
	HeaderTable         = "medallion.table"
	HeaderCommitVersion = "medallion.commit_version"
	HeaderChangeType    = "medallion.change_type"
)

// Counts are the records of a version (or a run), by what they say.
type Counts struct {
	// Upserts are records with a row: inserts and post-images.
	Upserts int64 `json:"upserts"`
	// Tombstones are records with a null value: rows that left the table.
	Tombstones int64 `json:"tombstones"`
	// Preimages are update_preimage rows not published (their post-image replaced the key).
	Preimages int64 `json:"preimagesSkipped"`
}

func (c *Counts) add(o Counts) {
	c.Upserts += o.Upserts
	c.Tombstones += o.Tombstones
	c.Preimages += o.Preimages
}

// Records returns the count of records published.
func (c Counts) Records() int64 { return c.Upserts + c.Tombstones }

// encoder turns one version's change rows into records (see the package doc for the rules).
type encoder struct {
	topic, table string
	keyCols      []string // nil: every non-null column
}

// layout is where the columns of a change set are.
type layout struct {
	data          []int // the table's columns (every column but the three the reader adds)
	key           []int // the key columns; nil: every data column
	changeType    int
	commitVersion int
}

func (e *encoder) layout(b *pq.Batch) (layout, error) {
	l := layout{changeType: b.Schema.FieldIndex(table.ChangeTypeColumn), commitVersion: b.Schema.FieldIndex(table.CommitVersionColumn)}
	for i, f := range b.Schema.Fields {
		switch f.Name {
		case table.ChangeTypeColumn, table.CommitVersionColumn, table.CommitTimestampColumn:
		default:
			l.data = append(l.data, i)
		}
	}
	for _, name := range e.keyCols {
		i := b.Schema.FieldIndex(name)
		if i < 0 {
			return l, fmt.Errorf("sink: key column %q is not a column of table %s", name, e.table)
		}
		l.key = append(l.key, i)
	}
	return l, nil
}

// key is row r's key: a JSON object of the key columns, or of every non-null column.
func (e *encoder) key(dst []byte, b *pq.Batch, l layout, r int) []byte {
	dst = append(dst, '{')
	first := true
	field := func(i int) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = pq.AppendJSONString(dst, b.Schema.Fields[i].Name)
		dst = append(dst, ':')
		dst = pq.AppendJSONValue(dst, b.Columns[i], r)
	}
	if l.key != nil {
		for _, i := range l.key {
			field(i)
		}
	} else {
		for _, i := range l.data {
			if !b.Columns[i].IsNull(r) {
				field(i)
			}
		}
	}
	return append(dst, '}')
}

// value is row r as the record's JSON value.
func (e *encoder) value(b *pq.Batch, l layout, r int, typ table.ChangeType, cs table.ChangeSet) []byte {
	dst := make([]byte, 0, 256)
	dst = append(dst, `{"change_type":`...)
	dst = pq.AppendJSONString(dst, string(typ))
	dst = append(dst, `,"commit_version":`...)
	dst = strconv.AppendInt(dst, cs.Version, 10)
	dst = append(dst, `,"commit_timestamp":`...)
	dst = pq.AppendJSONString(dst, pq.FormatTimestamp(cs.Timestamp.UnixMicro(), false))
	dst = append(dst, `,"row":{`...)
	for k, i := range l.data {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = pq.AppendJSONString(dst, b.Schema.Fields[i].Name)
		dst = append(dst, ':')
		dst = pq.AppendJSONValue(dst, b.Columns[i], r)
	}
	return append(dst, "}}"...)
}

// records are the records of one version's change rows, in the order they must be produced:
// tombstones, then rows, each key at most once. The records share their headers (one slice per
// change type) and their keys' bytes (one buffer): nothing may change them.
func (e *encoder) records(cs table.ChangeSet) ([]*kgo.Record, Counts, error) {
	var n Counts
	b := cs.Rows
	l, err := e.layout(b)
	if err != nil {
		return nil, n, err
	}
	if l.changeType < 0 {
		return nil, n, fmt.Errorf("sink: change rows of %s lack %s", e.table, table.ChangeTypeColumn)
	}
	rows := b.Len()
	keyBuf := make([]byte, 0, 64*rows)
	ends := make([]int, rows)
	types := make([]table.ChangeType, rows)
	lastNew := map[string]int{} // key -> the last insert or post-image row of it
	for r := range rows {
		keyBuf = e.key(keyBuf, b, l, r)
		ends[r] = len(keyBuf)
		types[r] = table.ChangeType(b.Columns[l.changeType].StringAt(r))
		if l.commitVersion >= 0 && !b.Columns[l.commitVersion].IsNull(r) && b.Columns[l.commitVersion].Int64[r] != cs.Version {
			return nil, n, fmt.Errorf("sink: change row %d of %s version %d says _commit_version %d", r, e.table, cs.Version, b.Columns[l.commitVersion].Int64[r])
		}
		switch types[r] {
		case table.ChangeInsert, table.ChangePostimage:
		case table.ChangeDelete, table.ChangePreimage:
			continue
		default:
			return nil, n, fmt.Errorf("sink: change row %d of %s version %d has _change_type %q", r, e.table, cs.Version, types[r])
		}
		lastNew[string(e.keyOf(keyBuf, ends, r))] = r
	}
	version := strconv.AppendInt(nil, cs.Version, 10)
	headers := map[table.ChangeType][]kgo.RecordHeader{}
	headersOf := func(typ table.ChangeType) []kgo.RecordHeader {
		h, ok := headers[typ]
		if !ok {
			h = []kgo.RecordHeader{{Key: HeaderTable, Value: []byte(e.table)}, {Key: HeaderCommitVersion, Value: version}, {Key: HeaderChangeType, Value: []byte(typ)}}
			headers[typ] = h
		}
		return h
	}
	out := make([]*kgo.Record, 0, len(lastNew))
	gone := map[string]bool{}
	for r := range rows {
		if types[r] != table.ChangeDelete && types[r] != table.ChangePreimage {
			continue
		}
		key := e.keyOf(keyBuf, ends, r)
		if _, replaced := lastNew[string(key)]; replaced || gone[string(key)] {
			if types[r] == table.ChangePreimage {
				n.Preimages++
			}
			continue
		}
		gone[string(key)] = true
		out = append(out, &kgo.Record{Topic: e.topic, Key: key, Headers: headersOf(types[r]), Timestamp: cs.Timestamp})
		n.Tombstones++
	}
	for r := range rows {
		if types[r] != table.ChangeInsert && types[r] != table.ChangePostimage {
			continue
		}
		key := e.keyOf(keyBuf, ends, r)
		if lastNew[string(key)] != r {
			continue
		}
		out = append(out, &kgo.Record{Topic: e.topic, Key: key, Value: e.value(b, l, r, types[r], cs),
			Headers: headersOf(types[r]), Timestamp: cs.Timestamp})
		n.Upserts++
	}
	return out, n, nil
}

// keyOf is row r's key in the buffer the keys were appended to (ends[r] is where it ends).
func (e *encoder) keyOf(buf []byte, ends []int, r int) []byte {
	start := 0
	if r > 0 {
		start = ends[r-1]
	}
	return buf[start:ends[r]:ends[r]]
}

// snapshotRecords are the records of a batch of the table's rows at a version, each published
// as an insert of that version (the first publication of a table whose feed cannot be read from
// its first version).
func (e *encoder) snapshotRecords(b *pq.Batch, version int64, at time.Time) ([]*kgo.Record, error) {
	l, err := e.layout(b)
	if err != nil {
		return nil, err
	}
	cs := table.ChangeSet{Version: version, Timestamp: at, Rows: b}
	headers := []kgo.RecordHeader{{Key: HeaderTable, Value: []byte(e.table)},
		{Key: HeaderCommitVersion, Value: strconv.AppendInt(nil, version, 10)}, {Key: HeaderChangeType, Value: []byte(table.ChangeInsert)}}
	out := make([]*kgo.Record, b.Len())
	for r := range b.Len() {
		out[r] = &kgo.Record{Topic: e.topic, Key: e.key(nil, b, l, r), Value: e.value(b, l, r, table.ChangeInsert, cs), Headers: headers, Timestamp: at}
	}
	return out, nil
}
