// Package sink publishes a Delta table's change data feed outside the lake: a `sinks:` entry
// of kind kafka sends every change of its table to a Kafka topic, one record per changed row,
// so that a compacted topic always holds the table (docs/change-data-feed.md, "Kafka sink").
//
// Records. The key is the row's identity as canonical JSON (an object of the key columns, in
// the table's column order): for a gold table its window and group-by columns, for any other
// table every column of the row that is not null (nulls are left out so that a column added
// later, null in the old rows, does not change their keys). The value is JSON:
//
//	{"change_type":"insert","commit_version":7,"commit_timestamp":"2026-12-05T01:00:00Z","row":{...}}
//
// with the whole new row (every column of the table, as `medallion table scan --format jsonl`
// prints it). A row that leaves the table is a tombstone (null value). Headers:
// medallion.table (the table's path in the config), medallion.commit_version (decimal) and
// medallion.change_type; the record's timestamp is the commit's.
//
// Which change rows become records, per version, so that the last record of each key is the
// table's row after that version: update_preimage rows are not published, the post-image
// replaces the key; a delete, or a pre-image whose key no insert or post-image of the same
// version carries (an update that changed a key column of a keyless table), is a tombstone;
// when a version both removes and adds a key (a file rewritten without change data files, read
// as a delete and an insert), the tombstone is left out and the new row published; a key is
// published at most once per version, tombstones before values. A table whose rows are not
// unique under the key (a keyless table with identical rows) is held as its distinct rows.
//
// Exactly once. Each run starts at the position the sink last committed and publishes versions
// in order in Kafka transactions (a transactional producer whose id is the sink's): a
// transaction holds whole versions, at least MaxRecordsPerTransaction records (or the rest),
// and commits, in the same transaction, the next version to publish as the offset of the
// consumer group "medallion-sink-<name>" on partition 0 of the topic (metadata: the table's
// path, its Delta table id and the last version published). Kafka makes the records and the
// position visible together or not at all, so after a crash at any instant:
//   - killed while a transaction is open: the next run's producer (same transactional id)
//     fences the old one and the broker aborts its transaction (or the transaction timeout
//     does); a read_committed reader never sees those records; the position is the previous
//     one and the run publishes those versions again, once;
//   - killed after the commit was asked for: the broker finishes it (its coordinator logged
//     the decision), and the next run reads the position with require_stable, which waits for
//     the outcome; the records and the position are both there, nothing is published twice;
//   - the lake is only read: no crash of a publisher leaves anything in the lake.
//
// A read_uncommitted consumer may see records of aborted transactions, as with any Kafka
// transactional producer; read the topic with isolation.level=read_committed. A compacted
// topic keeps, per key, the last committed record, and removes a tombstone after
// delete.retention.ms, so a consumer that reads it from the start (at any time) rebuilds the
// table as of the position's version. The position's table id is checked: a table that was
// recreated (a new Delta table id) stops the sink with ErrTableReplaced rather than publish
// its versions as if they followed the old ones.
//
// The first run publishes the feed from version 0. When the feed cannot be read from there (it
// was turned on later, the early commits were cleaned up, their change files vacuumed), it
// publishes instead the table's rows at its latest version V, as inserts of V, in one
// transaction whose position is V+1: the history before V is not in the topic, the table is.
// A table whose feed is off at its latest version is refused (table.ErrChangeFeedOff).
//
// Limits: versions the sink has not published yet must still have their change data (vacuum
// keeps _change_data files for jobs.vacuum.retain): a sink further behind fails with
// table.ErrChangeDataGone naming the file. One transaction holds at least one whole version
// (and a first run's snapshot, the whole table), whose records are built in memory.
package sink
