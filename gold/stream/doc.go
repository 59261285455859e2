// Package stream owns the streaming job runner: it reads the bronze table as a Delta stream,
// validates and deduplicates rows into silver, splits each gold aggregation's rows into on-time
// (aggregated into the gold table) and late (kept in that aggregation's quarantine table), and
// reports Spark-shaped progress. It ties together silver's source and dedup state, gold's
// event-time operators and the table writers.
//
// The checkpoint (under stream.checkpoint in the lake) has Spark's layout: metadata (the query
// id), offsets/N (written before batch N with put-if-absent: watermark, batch timestamp and the
// source's end offset), state/<N+1> (dedup and aggregation snapshots), commits/N (after every
// sink) and progress/N.json.
//
// Crash guarantees: every table write of batch N carries txn(appId = query id, version = N) and
// is skipped when the table already holds it; a batch whose offsets/N has no commits/N is
// re-run with exactly its recorded offsets, watermark and batch timestamp from state version N,
// and the operators are deterministic, so a process killed at any instant and run again leaves
// the same rows in every table as an uninterrupted run.
package stream
