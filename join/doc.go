// Package join owns the stream-stream join operator: Spark's symmetric hash join with its
// state watermarks, late-row drops and outer/semi emission, following spec/stream-joins.md to
// the letter (and its §9 where medallion differs on purpose: null join keys never match, in any
// join type).
//
// What it owns:
//   - [Spec] and [Spec.Validate]: the join type, the time-range condition as conjuncts
//     `R.t op L.t + offset` ([ParseCondition] reads Spark's textual forms), which sides carry a
//     watermark, and Spark's analysis errors for the combinations it rejects.
//   - [Spec.StateWatermarks]: the per-side state watermarks Spark derives from the condition
//     (StreamingJoinHelper's algebra, ms, truncated as Spark does).
//   - [Operator]: one micro-batch in (a columnar [Input] per side), rows out; the rows Spark
//     would drop as late come back separately per side so that the host quarantines them.
//   - [Watermarks]: the global watermark of the join's two inputs (min policy), with each
//     input's value kept across restarts (spec §2.6, §9.3).
//   - Snapshots and deltas of the operator's state ([Operator.AppendSnapshot],
//     [Operator.AppendDelta], [Restore], [Operator.ApplyDelta]).
//
// Everything here is pure and does no I/O: the host (stream/) encodes each input row into an
// opaque payload (with the exact row codec, pq.EncodeRow, which late/ and table/ compare
// rows by too) and its join key into bytes, passes the two watermarks of the batch, writes
// the output, quarantines the late rows and checkpoints the state.
//
// After a crash: the operator is a deterministic function of its restored state and the
// batch. An operator restored from the snapshot (or snapshot plus deltas) of batch N and fed
// batch N+1 produces byte-identical output, late rows and next snapshot to one that never
// stopped, so a host that checkpoints the state with each committed batch and re-runs the
// uncommitted batch after a kill converges to the same tables.
//
// Not covered, on purpose: Spark's state key watermark (spec §3.3: a window or an event-time
// column among the join keys) and one-side-only conjuncts (§5.4); the contract has neither, and
// the host must reject an `on:` pair that names the event-time columns (§9.5). Watermarks
// takes every row of a side, as §2.1 says; whether Spark's inferred `key IS NOT NULL` filter on
// a non-preserved side runs below the watermark node (so that null-key rows would not count)
// is not verified.
//
// Units: event times are microseconds since the epoch (UTC), watermarks milliseconds; a test
// `t <= W` means `t_µs <= W_ms*1000`, as in Spark.
package join
