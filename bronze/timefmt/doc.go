// Package timefmt owns how a timestamp column's values are read: the default forms (RFC 3339
// and 'YYYY-MM-DD HH:MM:SS'), Spark datetime patterns (config `format:`) and epoch numbers
// (config `unit:`). A pattern is compiled once (New); parsing a value does no pattern work and
// allocates nothing, since it runs on every ingested row. Config validation, bronze's decoders
// (NDJSON, CSV, Kafka, backfill) and the interop tests all use this one parser.
//
// Crash guarantee: none needed; the package is pure computation and keeps no state beyond a
// cache of loaded zone ids.
package timefmt
