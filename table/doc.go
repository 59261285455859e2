// Package table owns Delta tables as data: a Delta transaction log (package txlog) plus
// Parquet data files (package pq reads and writes them; package sqlexpr evaluates the
// predicates). It provides the data-file writer that lays files out by partition under
// unique names with per-file Delta statistics and the table's row rules (DataWriter), the
// scanner (projection, partition pruning, min/max data skipping, row filters, deletion
// vectors, column mapping, bloom-filter probes), and the table operations built on txlog
// commits: create, append, scan, replaceWhere overwrite, optimize and vacuum, and the one
// copy-on-write primitive (Table.Rewrite) that replaceWhere, MERGE (package merge) and the
// late-data jobs all use, and schema evolution (Evolve: nullable columns added in one metaData
// commit; EvolveWith may also widen a column as Delta's typeWidening allows, with the protocol
// and delta.typeChanges in the same commit; every other change refused with
// ErrIncompatibleSchema). Files written before a widening are read at the column's current
// type. Subpackage source reads a table as a stream. Changes (changes.go) reads a table's change
// data feed as Spark's table_changes does: a version's change data files when it has any, else
// its data-changing adds and removes, stamped with _commit_version and _commit_timestamp.
// Rewrite writes that feed (changewrite.go) on a table with delta.enableChangeDataFeed: the
// change rows its caller describes through a ChangeWriter, or else the exact difference of the
// rows it removed and wrote, as change data files under _change_data/ named by cdc actions of
// the same commit; a rewrite that changed no row commits with dataChange=false.
//
// Every write first runs CheckWritable for what it does (append, rearrange, change): the
// table's writer features are honoured or the write is refused before any data file is
// written (docs/table-features.md), and the table's row rules (CHECK constraints, column
// invariants, generated columns) are evaluated on every row a DataWriter writes.
//
// Crash guarantees: data files (and change data files) get unique names and are written
// before the commit that makes them live, so a crash at any instant leaves the table at its previous version plus, at worst,
// unreferenced files that vacuum removes later. No operation ever overwrites or deletes a file
// that a committed version references, except vacuum, and vacuum only deletes files that no
// version within the retention window references.
package table
