// Package late owns the late-data loop of the pipeline: merge-late, which folds each gold
// aggregation's quarantined late rows back into its gold table (and each join's quarantined
// input rows into its joined table, below), and replay, which recomputes whole windows of a
// time range from silver (or bronze) and overwrites exactly that range.
//
// Merge-late reads the quarantine rows added by the commits after the version recorded in
// gold's txn(appId = "merge-late:" + query id), applies each row only to the windows that had
// already closed when it was judged (gold.WindowSpec.LateWindows: its other windows got the
// row in the stream), and upserts gold in one commit carrying txn(that appId, quarantine
// version). For session windows a late row can extend or bridge sessions, so merge-late
// re-sessionizes the late rows' keys over the affected range from silver instead and replaces
// those sessions, with the same txn. The session quarantine also holds the stream's
// corrections (rows on time by Spark's rule that touch a session already in gold, gold's
// session.go): merged the same way, they fuse what the stream emitted apart. Sessions from a
// key's first one the stream still holds are left to it (with no txn, so the rows are merged
// again once it has emitted them): the stream's open sessions and what gold and the
// quarantine hold never share a row. Replay widens the range to whole windows (per key for
// sessions), keeps only windows the stream has already emitted, and replaces them in one
// commit; it runs merge-late first, and reads the source as of the last batch whose late rows
// gold has absorbed, so that no row is counted by both.
//
// One reconciler (reconcile.go) runs every job: find what the input affects (merge-late: the
// rows of the quarantine versions not merged yet; replay: a range), recompute those rows from
// the inputs, and rewrite them in one copy-on-write commit (rewrite.go, the only commit path
// of the package). Each kind of output is a plug-in behind outputKind, with merge-late and
// replay as its two modes: windowAgg (tumbling and sliding windows), sessionAgg (session
// windows), the join merge (a joined table), and, for an aggregation over a join, windowAgg or
// sessionAgg over the joined table with the join's watermark.
//
// Float sums and averages are exact (gold.Exact): merge-late adds the late rows to the exact
// sum a gold row keeps in its internal _<as>_exact column (a null there, or a table without
// the column, stands for the exact value of the row's double), and replay recomputes exact
// sums whatever its worker count, so a replay of a range gold already holds finds every row
// equal and commits nothing. Before either writes to a gold table that lacks those columns (created before
// sums were exact, or by Spark's export) it adds them with a metaData action of its own.
//
// Change data feed: on a table with delta.enableChangeDataFeed (gold and joined tables are
// created with it) the one rewrite writes the commit's change rows (changefeed.go): a row
// rewritten in place is an update_preimage/update_postimage pair; rows dropped and rows written
// that are equal cancel; the rest are paired by the output kind's key (gold: window and group
// keys, sessions by group keys and overlapping windows; a joined table: a null-extended row by
// its preserved side), the unpaired being deletes and inserts. Change files are written before
// the commit like data files, so a killed run leaves none that a reader sees.
//
// Row tags (tagplan.go): every gold file the jobs (and the stream) add carries, in its add
// action, the sums of its rows' hashes by window start (table.RowTagKey). Replay compares the
// windows it recomputes with them before it reads gold: a range that equals them reads no gold
// and commits nothing; otherwise only the files of the windows that changed, and the files
// without a trusted tag, are read and rewritten. A tag is in the add action of its file, so a
// kill leaves both or neither.
//
// Concurrency: both jobs commit at WriteSerializable with copy-on-write of the touched files
// only. The stream's gold appends are blind appends, which never conflict with them, and they
// only ever add windows that are still open, which these jobs never touch; merge-late and
// replay against each other conflict through txlog's checks and are retried from scratch.
//
// Crash guarantees: data files are written under unique names before the single commit that
// makes them live, so a process killed at any instant leaves gold unchanged; merge-late's txn
// makes a rerun skip a merge that landed, and replay is a deterministic function of silver, so
// a rerun rewrites the same rows. The stream's query id is read, never created: a checkpoint
// that lost it (checkpoint.ErrQueryIDLost) stops merge-late, and a quarantine below the version
// merge-late's txn recorded (a deleted _delta_log entry), or a gold, quarantine or (replay)
// silver table behind the stream's last commit record, stops it with checkpoint.ErrTableBehind.
//
// Merge-late for a join (MergeLateJoin, spec/stream-joins.md §9.1) does not add deltas: it
// reconciles. Its unit is a row value of one side (identical rows are one value counted with
// its copies, since identical inputs give identical outputs). The candidates of a run are the
// join quarantine's rows of the versions not merged yet, the earlier quarantined rows still
// pending, and every silver row of the other side that pairs with one of those. For each
// candidate it computes the batch join's rows that hold it from the two silver tables as the
// join's last committed batch read them (offsets/N, one line per source; without them, the
// latest silver): every pair with its partners, counted as the product of the two values'
// copies; a null-extended row when it has no partner, its side is preserved and its match
// window is closed at W_last (left: t <= W_last - upper - 1 ms, right: t <= W_last + lower -
// 1 ms); for left_semi the left row once per copy when it has a partner. It reads the joined
// table's rows that hold a candidate and, when the two multisets differ, replaces those rows
// in one copy-on-write commit. That one rule covers appending the missing pairs, replacing a
// null-extended row that now has a match, writing a closed late row's null row, a left_semi
// row the stream emitted again, and never adding a semi row twice. The rows that hold no
// candidate are the stream's, and equal the batch join's: a row pairs with a late row only if
// it is a candidate, and was one at every merge since that late row arrived.
//
// Reads use data skipping on the event times: the quarantine's new versions whole and its
// older files only where a pending row can be; each side's silver only within the match
// ranges (join.Spec.MatchRange) of the candidates, and only their join keys; the joined
// table only within the candidates' times.
//
// Pending rows: a quarantined row needs merging again while the stream can still change the
// rows that hold it or its partners: an on-time partner can still arrive (its match range
// reaches past the watermark), or a preserved side's null row is not decided yet (its window
// is open), for it or for any row it can pair with; and, when the join has aggregations,
// until the windows its joined rows fall in are emitted. The commit carries txn(appId =
// "merge-late:" + the join's query id, version = the quarantine version merged), the
// high-water mark of the rows read as new, and records in its commitInfo the watermark it
// judged with; the next run re-reads the earlier quarantine rows not settled at that
// watermark (every earlier row when it cannot be found: slower, never wrong). Because the run
// reconciles instead of adding, merging a row again changes nothing once the table is right,
// so a rerun is a no-op and a pending row is harmless to revisit.
//
// Aggregations over a join: with Options.Join set and the Query of JoinQuery, MergeLate and
// Replay use the join's output watermark (join.Spec.OutputWatermark of the batch watermark)
// and the aggregation's time_column. The rows merge-late writes into the joined table never
// went through the stream's aggregations, so MergeLateJoin then replays, for each of the
// join's aggregations, the windows over the event times its candidates touch (invariant E
// over the joined table); windows the stream has not emitted yet are left to it and their
// rows stay pending until it has.
//
// A join merge refuses to run (ErrJoinUncommitted) while the joined table or the quarantine
// hold a batch the join's checkpoint has not committed: the stream's rerun of that batch
// comes first. A commit that fails leaves the joined table as it was (data files first, then
// one commit), and a rerun reconciles again to the same rows.
package late
