// Package txlog owns the Delta Lake transaction log of one table: the actions, log replay
// into an immutable Snapshot (checkpoints classic, multi-part and v2, JSON commits, time
// travel by version and timestamp), protocol checks (CheckRead; CheckWrite, which holds each
// writer feature's obligations against what a write does, and runs again in every commit),
// optimistic commits with put-if-absent and Delta's conflict checks, checkpoints, and log
// cleanup. It knows nothing about Parquet rows: data files are opaque paths with sizes,
// partition values and stats.
//
// A table is an objstore.Bucket rooted at the table folder; the log lives under
// "_delta_log/".
//
// Conventions callers rely on:
//   - Add.Path and Remove.Path are URI-decoded once: they are object keys relative to the table
//     root (or absolute URIs). JSON encoding re-encodes them, keeping another writer's exact
//     encoding when it still decodes to the same path.
//   - Snapshots are immutable and safe to share; Refresh brings one up to date reading only
//     the commits after it (no listing), and loads the table afresh when it went back (the
//     snapshot's version is gone: restored from a backup, created again).
//   - Costs do not grow with the log's length: a load starts at _last_checkpoint and lists
//     after it, a refresh reads the new commits, and log cleanup lists only the range that can
//     expire.
//   - A Transaction records what it read (ReadWholeTable, ReadPredicate, ReadFiles; removing a
//     file counts as reading it). Blind appends (only adds, nothing read) never conflict and
//     retry up to 100 times; other transactions retry up to 10 times after passing Delta's
//     conflict checks against every winning commit, else fail with an error wrapping
//     ErrConflict. The default isolation is Serializable, as open-source Delta records it.
//   - Time travel by timestamp picks the latest version whose commit time is <= T (file
//     modification times, monotonized, or in-commit timestamps); a T before the earliest
//     reconstructable commit or after the latest one is ErrVersionNotFound.
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
