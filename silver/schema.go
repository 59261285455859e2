package silver

import (
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// Extra columns of a quarantine table (DESIGN.md §3), after the silver columns.
const (
	// ColLateWatermark is the late-row watermark that judged the row late.
	ColLateWatermark = "late_watermark"
	// ColBatchID and ColQueryID say which micro-batch of which query quarantined the row.
	ColBatchID = "batch_id"
	ColQueryID = "query_id"
)

// Schema is the silver table's schema for a bronze schema: the same columns, so that a silver
// row keeps its lineage (_ingest_time, _source_file, _source_offset).
func Schema(bronzeSchema *txlog.StructType) *txlog.StructType {
	return &txlog.StructType{Fields: append([]txlog.StructField(nil), bronzeSchema.Fields...)}
}

// QuarantineSchema is a quarantine table's schema: the silver columns as they were, then the
// watermark that judged the row late, the batch and the query.
func QuarantineSchema(silver *txlog.StructType) *txlog.StructType {
	q := &txlog.StructType{Fields: append([]txlog.StructField(nil), silver.Fields...)}
	q.Fields = append(q.Fields,
		txlog.StructField{Name: ColLateWatermark, Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}},
		txlog.StructField{Name: ColBatchID, Type: txlog.PrimitiveType{Name: txlog.TypeLong}},
		txlog.StructField{Name: ColQueryID, Type: txlog.PrimitiveType{Name: txlog.TypeString}})
	return q
}

// Late says when and by whom rows were judged late: the late-row watermark (ms), the batch and
// the query.
type Late struct {
	WatermarkMs int64
	Batch       int64
	QueryID     string
}

// QuarantineBatch renders rows idx of rows (silver columns, silverSchema) in the quarantine
// schema qschema (QuarantineSchema(silverSchema)), judged late as l says.
func QuarantineBatch(silverSchema, qschema *txlog.StructType, rows *Rows, idx []int32, l Late) (*pq.Batch, error) {
	q, err := pq.NewBatch(silverSchema)
	if err != nil {
		return nil, err
	}
	for _, j := range idx {
		q.AppendRow(rows.Batches[rows.Batch[j]], int(rows.Row[j]))
	}
	lw, _ := pq.NewColumn(qschema.Fields[len(qschema.Fields)-3].Type)
	bid, _ := pq.NewColumn(qschema.Fields[len(qschema.Fields)-2].Type)
	qid, _ := pq.NewColumn(qschema.Fields[len(qschema.Fields)-1].Type)
	for range idx {
		lw.AppendInt64(l.WatermarkMs * 1000)
		bid.AppendInt64(l.Batch)
		qid.AppendString(l.QueryID)
	}
	return &pq.Batch{Schema: qschema, Columns: append(q.Columns, lw, bid, qid)}, nil
}
