// Package late owns the late-data loop of the pipeline: merge-late, which folds each gold
// aggregation's quarantined late rows back into its gold table, and replay, which recomputes
// whole windows of a time range from silver (or bronze) and overwrites exactly that range.
//
// Merge-late reads the quarantine rows added by the commits after the version recorded in
// gold's txn(appId = "merge-late:" + query id), applies each row only to the windows that had
// already closed when it was judged (gold.WindowSpec.LateWindows: its other windows got the
// row in the stream), and upserts gold in one commit carrying txn(that appId, quarantine
// version). For session windows a late row can extend or bridge sessions, so merge-late
// re-sessionizes the late rows' keys over the affected range from silver instead and replaces
// those sessions, with the same txn. Replay widens the range to whole windows (per key for
// sessions), keeps only windows the stream has already emitted, and replaces them in one
// commit; it runs merge-late first, and reads the source as of the last batch whose late rows
// gold has absorbed, so that no row is counted by both.
//
// Concurrency: both jobs commit at WriteSerializable with copy-on-write of the touched files
// only. The stream's gold appends are blind appends, which never conflict with them, and they
// only ever add windows that are still open, which these jobs never touch; merge-late and
// replay against each other conflict through txlog's checks and are retried from scratch.
//
// Crash guarantees: data files are written under unique names before the single commit that
// makes them live, so a process killed at any instant leaves gold unchanged; merge-late's txn
// makes a rerun skip a merge that landed, and replay is a deterministic function of silver, so
// a rerun rewrites the same rows.
package late
