// Package stream owns the streaming job: micro-batches over the bronze table read as a Delta
// stream (table/source), silver's validation and dedup on each batch (package silver), every
// gold aggregation (package gold) in order with the on-time/late split, the checkpoint
// (package stream/checkpoint) and Spark-shaped progress reports.
//
// A batch, in order: read the bronze files of its offset range; reject rows without an event
// time or a required column, and rows whose event time is beyond _ingest_time +
// max_future_skew (reason "future", never seen by the watermark); feed the watermark; drop
// duplicates of stream.dedup (keys in state, and for rows at or below the late-row watermark
// keys already in silver); append the rest to silver; run every gold aggregation on them with
// the late-row watermark W(N-1) and the eviction watermark W(N).
//
// Tables written (besides silver, which has bronze's columns, and the shared rejects table,
// stage "validate"): each aggregation's quarantine (silver.QuarantineSchema) and its gold
// table (the gold-row contract of gold/row.go), with late_rows 0 from the stream, raised by
// merge-late. Append mode appends closed windows, complete mode overwrites the table, update
// mode MERGEs on (window, keys).
//
// The checkpoint (under stream.checkpoint in the lake) has Spark's layout: metadata (the query
// id), offsets/N (written before batch N with put-if-absent: watermark, batch timestamp and the
// source's end offset), state/<N+1> (each aggregation's snapshot; the dedup state as a full
// snapshot every state.min_deltas_for_snapshot versions and the batch's additions in between),
// commits/N (after every sink) and progress/N.json.
//
// Schemas and definitions (definition.go, docs/schema-evolution.md): silver and each quarantine
// follow bronze's columns, so a column added to bronze is added to them (table.Evolve, one
// metaData commit) before the first batch writes a row of it; a query whose input gains columns
// while it runs stops before the next batch (ErrInputSchemaChanged). The silver, gold and joined
// tables record the definition they are written under (PropDefinition); a query whose config
// changed a definition, or a join whose inputs gained columns, is refused at start with
// ErrDefinitionChanged, before any state is decoded. The way out for a gold of a source query
// is RefreshGold (refresh.go, `run refresh`), of a join RefreshJoinGold
// (refreshjoin.go): with the query stopped, it rebuilds the gold table and that aggregation's
// state from silver (or the joined table) under the new definition in one commit
// (table.Replace) naming the rebuilt state, written under the checkpoint's refresh/ before it;
// the query restoring that batch takes the state from there and writes a full snapshot next.
// A kill before the commit leaves table and state as they were.
//
// One engine runs every query (engine.go): it owns the offsets, commits, state and progress
// path, the identity checks, the trigger loop, the no-data rule and the txn of every write,
// and drives a query (a small interface) over one or more inputs read as Delta streams. The
// source query above (Runner: runner.go, batch.go, agg.go, state.go) and the stream-stream join
// (JoinRunner: join.go, joinplan.go, joinbatch.go) are its two configurations. The join reads
// the silver tables of two sources, runs package join's operator with per-source watermarks
// kept in its checkpoint, appends to the joined table and the join quarantine, and hosts the
// aggregations over the join with the watermark the join propagates. join.go's comment
// describes its checkpoint, which has the same layout.
//
// Crash guarantees: every table write of batch N carries txn(appId = query id, version = N) and
// is skipped when the table already holds it; a batch whose offsets/N has no commits/N is
// re-run with exactly its recorded offsets, watermark and batch timestamp from state version N,
// and the operators are deterministic, so a process killed at any instant and run again leaves
// the same rows in every table as an uninterrupted run.
//
// Identity (identity.go, recover.go): commits/N records what each written table holds; a run
// refuses to start (nothing written) when the query id is lost, a written table lacks a batch
// the checkpoint calls committed or is below the recorded version, or an input is below the
// version the offsets read. RecoverQueryID and Rollback are the recoveries (docs/recovery.md);
// a rolled-back checkpoint's batches are re-run one by one with their recorded offsets.
package stream
