// Package bronze owns ingestion: landing objects (NDJSON, gzip, CSV) become rows of the bronze
// Delta table, exactly once, and every line that is not a record becomes a row of the rejects
// table with a reason, the source object, the byte offset and the raw text.
//
// The hot path parses each line straight into typed columnar batches with a schema-driven
// scanner (no encoding/json, no per-line allocation) and encodes Parquet on every core. An
// NDJSON object is cut into blocks of whole lines that are decoded on every core while the
// blocks before are written, in the object's order (blocks.go); a batch commits while the next
// is decoded.
//
// Accounting: for every object, non-blank lines = bronze rows + rejects. Fields that do not fit
// the declared schema are kept verbatim in _rescued_data, so nothing is lost.
//
// Cost per record is bounded: a JSON line or CSV record longer than Limits.MaxLineBytes is
// rejected (line_too_long) after holding at most that many bytes of it; CSV records are cut
// where encoding/csv would cut them (readCSVRecord) before encoding/csv sees them.
//
// Every string column holds valid UTF-8: records with invalid bytes (JSON or CSV) are rejected
// with invalid_utf8, rejects keep their raw text with invalid bytes as U+FFFD, and an object key
// that is not UTF-8 is stored Go-quoted (EscapeKey).
//
// Crash guarantees: an ingest batch is claimed in the ingest checkpoint (put-if-absent) before any
// data is written, and committed to each table with txn(appId, batch) in batch order. A process
// killed at any instant leaves at most a pending batch, which the next run re-runs with the same
// objects and the same ingest time; tables skip what they already hold. Two ingesters on one lake
// never claim one object twice. A run refuses to start, writing nothing, when metadata.json (the
// id behind every txn) is missing while batches exist, or when bronze or rejects lacks the last
// committed batch or is below the version it recorded (identity.go); Rollback and RecoverID
// are the recoveries (docs/recovery.md).
package bronze
