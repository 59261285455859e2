package table

import "github.com/medallion-lake/medallion/txlog"

// SequenceModTimes makes the modification times of a commit's files strictly increasing in the
// order they are listed, and later than every file of snap. A Delta stream that starts from a
// snapshot orders files by modification time, then by (random) name: with this, that order is
// the table's commit order, each commit's files in the order listed, the same for every copy of
// the table and for Spark, whichever of the files was written first. The times move by at most
// a millisecond a file, far below any retention.
func SequenceModTimes(snap *txlog.Snapshot, adds []*txlog.Add) {
	floor := int64(0)
	for _, f := range snap.Files() {
		floor = max(floor, f.ModificationTime)
	}
	for _, a := range adds {
		floor++
		a.ModificationTime = max(a.ModificationTime, floor)
		floor = a.ModificationTime
	}
}
