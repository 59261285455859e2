// Package bronze owns ingestion: landing objects (NDJSON, gzip, CSV) become rows of the bronze
// Delta table, exactly once, and every line that is not a record becomes a row of the rejects
// table with a reason, the source object, the byte offset and the raw text.
//
// Kafka topics are a landing too (kafka.go: the batches of offset ranges and their checkpoint;
// kafka_decode.go: a record to a row): the Kafka client side (connection, offsets, reading a
// range, lag, the monitoring group) is package kafka's, shared with gen, report and jobs.
//
// The hot path parses each line straight into typed columnar batches with a schema-driven
// scanner (no encoding/json, no per-line allocation) and encodes Parquet on every core. An
// NDJSON object is cut into blocks of whole lines that are decoded on every core while the
// blocks before are written, in the object's order (blocks.go); a batch commits while the next
// is decoded.
//
// Arrival order (docs/arrival-order.md): bronze read in commit order holds the rows in batch
// order, then the batch's objects in listing order (Kafka: (topic, partition), then offset),
// then line offset. A batch is cut into contiguous parts by its objects' listed sizes
// (parts.go), each part its own data files listed in the commit in order, so the files a batch
// becomes, and with them the stream's micro-batches and first arrivals, never depend on the
// number of cores.
//
// Accounting: for every object, non-blank lines = bronze rows + rejects. Fields that do not fit
// the declared schema are kept verbatim in _rescued_data, so nothing is lost. Each batch is
// counted in the Report of exactly one run, the one whose commit record lands (put-if-absent),
// even when several ingesters finish it at once or one finishes what another left: the
// summaries of an interrupted run and its rerun, or of racing ingests, add up to the lines.
//
// Cost per record is bounded: a JSON line or CSV record longer than Limits.MaxLineBytes is
// rejected (line_too_long) after holding at most that many bytes of it; CSV records are cut
// where encoding/csv would cut them (readCSVRecord) before encoding/csv sees them.
//
// Every string column holds valid UTF-8: records with invalid bytes (JSON or CSV) are rejected
// with invalid_utf8, rejects keep their raw text with invalid bytes as U+FFFD, and an object key
// that is not UTF-8 is stored Go-quoted (EscapeKey).
//
// Schema evolution (evolve.go): before writing, ingest brings an existing bronze table in line
// with the declared columns: a new column is added with one metaData commit (nullable; older
// rows read null) before any row carries it, the declared schema is recorded in the table
// property PropDeclaredSchema, and any other change (a column removed, renamed, retyped or made
// required) is refused with ErrSchemaChange. backfill.go moves values older rows kept in
// _rescued_data into such columns (`run backfill-columns`), one idempotent copy-on-write commit
// per table.
//
// Files: ingest.go runs the file ingest (claim, prepare, commit in batch order); checkpoint.go
// holds its checkpoint records and reads them; discover.go finds what is left to read (new,
// appended, rewritten objects); ingest_worker.go decodes a batch's parts into data files;
// object.go and ndjson.go turn bytes into rows; report.go is the run's summary.
//
// Crash guarantees: an ingest batch is claimed in the ingest checkpoint (put-if-absent) before any
// data is written, and committed to each table with txn(appId, batch) in batch order. A process
// killed at any instant leaves at most a pending batch, which the next run re-runs with the same
// objects and the same ingest time; tables skip what they already hold. Two ingesters on one lake
// never claim one object twice. A schema change is its own commit before the batch's: a crash
// between the two leaves the column added, which the rerun finds and keeps. A run refuses to
// start, writing nothing, when metadata.json (the id behind every txn) is missing while batches
// exist, or when bronze or rejects lacks the last committed batch or is below the version it
// recorded (identity.go); Rollback and RecoverID are the recoveries (docs/recovery.md).
package bronze
