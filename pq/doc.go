// Package pq owns Parquet data files as columnar batches, and knows nothing about Delta
// tables, their logs or their object stores: it takes a schema (txlog's StructType, the Delta
// schema types) and bytes, and gives batches, or the other way round.
//
// It provides the columnar Batch and Column used on the hot path (with Decimal128, the Go
// values of Value/AppendValue, the key encoding of column values, the exact row codec
// (EncodeRow/DecodeRow: the one row identity of the join state, late/ and the change feed),
// and the JSON and text forms of values: Delta partition values, statistics timestamps), the
// Delta <-> Parquet schema mapping, the reader for every page layout Spark, delta-rs and pyarrow write
// (DecodeFile; NewFileReader for one row group at a time into a ReadBuffer; differential
// tests against pyarrow in tests/interop and against randomized files of package pqtest), and
// the writer on parquet-go (EncodeFile, FileEncoder: row groups, dictionary and plain pages,
// Delta per-file statistics, bloom filters).
//
// Crash guarantees: pq writes nothing durable itself. EncodeFile and FileEncoder build a
// file in memory and hand it to the caller (package table writes it under a unique name
// before the commit that makes it live), so a crash leaves no half-written file that anything
// references; the reader only reads, and refuses a damaged file with ErrBadDataFile.
//
// Its errors keep the "table:" prefix they had when this code lived in package table, so that
// error texts users and tests match on stay the same.
package pq
