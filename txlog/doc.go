// Package txlog owns the Delta Lake transaction log of one table: the actions, log replay
// into an immutable Snapshot (checkpoints classic, multi-part and v2, JSON commits, time
// travel by version and timestamp), protocol checks, optimistic commits with put-if-absent
// and Delta's conflict checks, checkpoints, and log cleanup. It knows nothing about Parquet
// rows: data files are opaque paths with sizes, partition values and stats.
//
// A table is an objstore.Bucket rooted at the table folder; the log lives under
// "_delta_log/".
//
// Crash guarantees: a commit is exactly the creation of "_delta_log/%020d.json" with
// put-if-absent, so a process killed at any instant leaves either no commit or a whole one.
// Data files a killed writer left behind are unreferenced and invisible (VACUUM removes them);
// txlog never deletes data files. A checkpoint is written only after its commit exists and is
// complete-or-absent (a single put); "_last_checkpoint" is only a hint, so a crash between the
// checkpoint and the hint, or a torn or stale hint, is repaired by listing. Log cleanup deletes
// only files that no reachable snapshot within the retention needs, oldest first, so a crash in
// the middle leaves a readable log.
package txlog
