package bronze

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// Bronze columns of rows read from Kafka, after the metadata columns of BronzeSchema (DESIGN.md
// §8). _source_file holds "kafka://<topic>/<partition>" and _source_offset the record's offset,
// so silver's lineage and the rejects' source columns work the same for both landing kinds.
const (
	ColKafkaTopic     = "_kafka_topic"
	ColKafkaPartition = "_kafka_partition"
	ColKafkaOffset    = "_kafka_offset"
	ColKafkaTimestamp = "_kafka_timestamp"
	ColKafkaKey       = "_kafka_key"
)

// KafkaBronzeSchema is BronzeSchema followed by the _kafka_* columns. _kafka_key is binary, as
// in Spark's Kafka source: keys are bytes and need not be UTF-8.
func KafkaBronzeSchema(declared *txlog.StructType) *txlog.StructType {
	s := BronzeSchema(declared)
	prim := func(name, typ string, nullable bool) txlog.StructField {
		return txlog.StructField{Name: name, Type: txlog.PrimitiveType{Name: typ}, Nullable: nullable}
	}
	s.Fields = append(s.Fields,
		prim(ColKafkaTopic, txlog.TypeString, false),
		prim(ColKafkaPartition, txlog.TypeInteger, false),
		prim(ColKafkaOffset, txlog.TypeLong, false),
		prim(ColKafkaTimestamp, txlog.TypeTimestamp, false),
		prim(ColKafkaKey, txlog.TypeBinary, true),
	)
	return s
}

// KafkaSourceName is what _source_file and the rejects' source_file hold for a Kafka record.
func KafkaSourceName(topic string, partition int32) string {
	return "kafka://" + topic + "/" + strconv.Itoa(int(partition))
}

// kafkaDecoder decodes record values into the Kafka bronze schema, reusing the file decoder's
// line parser, CSV conversion and rejects.
type kafkaDecoder struct {
	*Decoder
	names []string
	index []int
}

func newKafkaDecoder(declared *txlog.StructType, limits Limits) (*kafkaDecoder, error) {
	d, err := NewDecoder(declared, limits)
	if err != nil {
		return nil, err
	}
	if d.Bronze, err = pq.NewBatch(KafkaBronzeSchema(declared)); err != nil {
		return nil, err
	}
	k := &kafkaDecoder{Decoder: d}
	for i, f := range d.fields {
		k.names = append(k.names, f.Name)
		k.index = append(k.index, i)
	}
	return k, nil
}

// record turns one Kafka record into a bronze row or a reject. Every record is one or the other
// (records = rows + rejects): an empty value (a tombstone) is not a record of the schema.
func (d *kafkaDecoder) record(st *ObjectStats, rec *kgo.Record, source, format string, ingestTime int64) {
	value := rec.Value
	st.Bytes += int64(len(value))
	// Only rejects need the text: building it for every record cost an allocation per row.
	where := func() string {
		return fmt.Sprintf("topic %s partition %d offset %d", rec.Topic, rec.Partition, rec.Offset)
	}
	rej := rejected{key: source, offset: rec.Offset, raw: value, rawSize: int64(len(value))}
	if value == nil {
		rej.raw = nil
	}
	if len(value) > d.limits.MaxLineBytes {
		d.appendReject(st, rej, ReasonTooLong, fmt.Sprintf("%s: value of %d bytes exceeds the %d-byte limit", where(), len(value), d.limits.MaxLineBytes), ingestTime)
		return
	}
	body := bytes.TrimRight(value, "\r\n")
	if len(bytes.TrimSpace(body)) == 0 {
		d.appendReject(st, rej, ReasonNotObject, where()+": empty value (a tombstone or blank record)", ingestTime)
		return
	}
	switch format {
	case FormatCSV:
		if !d.csvValue(st, body, rej, where, source, rec.Offset, ingestTime) {
			return
		}
	default:
		if err := d.parser.Parse(body); err != nil {
			var le *LineError
			reason := ReasonInvalidJSON
			if errors.As(err, &le) {
				reason = le.Reason
			}
			d.appendReject(st, rej, reason, where()+": "+err.Error(), ingestTime)
			return
		}
		d.appendParsed(source, rec.Offset, ingestTime)
	}
	n := len(d.fields) + 4
	cols := d.Bronze.Columns
	cols[n].AppendString(rec.Topic)
	cols[n+1].AppendInt32(rec.Partition)
	cols[n+2].AppendInt64(rec.Offset)
	cols[n+3].AppendInt64(rec.Timestamp.UnixMicro())
	if rec.Key == nil {
		cols[n+4].AppendNull()
	} else {
		cols[n+4].AppendBytes(rec.Key)
	}
	st.Rows++
	st.Lines++
}

// csvValue appends one CSV record (the declared columns in order, no header) as a row; false
// when it was rejected instead.
func (d *kafkaDecoder) csvValue(st *ObjectStats, body []byte, rej rejected, where func() string, source string, offset, ingestTime int64) bool {
	cr := csv.NewReader(bytes.NewReader(body))
	cr.FieldsPerRecord = -1
	rec, err := cr.Read()
	if err == nil {
		if _, more := cr.Read(); more != io.EOF {
			err = errors.New("the value holds more than one CSV record")
		}
	}
	if err != nil {
		d.appendReject(st, rej, ReasonInvalidCSV, where()+": "+err.Error(), ingestTime)
		return false
	}
	if i, at := invalidUTF8Field(rec); i >= 0 {
		name := "_c" + strconv.Itoa(i)
		if i < len(d.names) {
			name = d.names[i]
		}
		d.appendReject(st, rej, ReasonInvalidUTF8, fmt.Sprintf("%s: field %d (%s) is not valid UTF-8 at byte %d of the field", where(), i+1, name, at), ingestTime)
		return false
	}
	d.csvRecord(rec, d.names, d.index, source, offset, ingestTime)
	return true
}
