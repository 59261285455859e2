// Package gold owns the event-time core of the streaming job: window assignment (tumbling,
// sliding, session), the watermark tracker, mergeable aggregates, the per-aggregation operator
// that splits (row, window) pairs into on-time and late, the output modes and state snapshots
// and deltas. It follows spec/streaming-semantics.md to the letter, with one addition: a
// session row on time by Spark's rule that touches a session already emitted (or a row already
// quarantined) is reported with the late rows as a correction instead of starting a second,
// overlapping session (session.go; docs/late-data.md). It also holds the gold-row
// contract (row.go): the columns of a gold table and how an aggregate's value is written into
// them, shared by the stream and the late-data jobs; group keys use table's key encoding.
// Float sums and averages are exact (Exact, exact.go): order-independent, correctly rounded
// once when read, kept exactly in state and, encoded, in gold's internal _<as>_exact columns.
//
// Everything here is pure and does no I/O (row.go uses table's in-memory columns and txlog's
// schema types, nothing that reads or writes storage): the stream runner adapts columnar
// batches to [Input], persists [Aggregation] snapshots and watermarks, and writes tables.
// Crash safety therefore reduces to determinism: an operator restored from the snapshot of
// version N and fed batch N again produces byte-identical output and the identical snapshot
// N+1, so a runner that was killed at any instant converges by re-running the uncommitted
// batch.
//
// Units: event times and window bounds are microseconds since the epoch (UTC), watermarks are
// milliseconds, and every late/eviction test is `end <= wmMs*1000`, as in Spark.
package gold
