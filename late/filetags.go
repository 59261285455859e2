package late

import (
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// fileTags works out, for each file a merge rewrites, the row tag sums of the rows it writes in
// the file's place without hashing the rows it keeps: the old file's tag (when its writer's
// hasher is ours and the tag still describes the file), less the hashes of the rows dropped
// or rewritten, plus those of the rows added. Gold's merges keep nearly every row of a file
// (all but its late windows), whose hashing was about 12% of merge-late at 10M events and
// 100k keys.
type fileTags struct {
	h      *table.RowHasher // nil: off (every row written is hashed by the writer)
	schema *txlog.StructType
	// sums are the current file's, nil when it has no tag to start from.
	sums table.GroupSums
	// read and rep are the columns, in the table's schema, of the batch in hand and of the
	// batch the row function writes new rows to: each row is hashed when the merge handles
	// it, while it is in the cache (hashing them at the end of a batch of 200k rows cost
	// several times more, a cache miss a column).
	read, rep []*pq.Column
}

// keepTags turns on fileTags for the rewrite's table and tag spec.
func (p *filePass) keepTags() error {
	schema, err := p.rw.snap.Schema()
	if err != nil {
		return err
	}
	h, err := table.NewRowHasher(p.rw.snap, schema, *p.rw.rowTags)
	if err != nil {
		return err
	}
	p.tags = fileTags{h: h, schema: schema}
	return nil
}

// fileTags is the rewrite's table.Rewrite.FileTags: the sums of the file File just decided.
func (p *filePass) fileTags(*txlog.Add) (table.GroupSums, bool) {
	return p.tags.sums, p.tags.sums != nil
}

// start begins file f: its tag's sums, if it has a tag the hasher trusts.
func (t *fileTags) start(f *txlog.Add) {
	t.sums = nil
	if t.h != nil {
		t.sums, _ = t.h.Trusted(f)
	}
}

// beginBatch starts a batch read from the file (b) and the batch of new rows (rep).
func (t *fileTags) beginBatch(b, rep *pq.Batch) error {
	if t.sums == nil {
		return nil
	}
	var err error
	if t.read, err = pq.Conform(t.schema, b); err != nil {
		return err
	}
	t.rep, err = pq.Conform(t.schema, rep)
	return err
}

// removed takes the hash of row i of the batch in hand, not written, off the sums.
func (t *fileTags) removed(i int) {
	if t.sums == nil {
		return
	}
	if g, h, ok := t.h.Row(t.read, i); ok {
		t.sums.Sub(g, h)
	}
}

// added adds the hashes of the rows of rep, written, to the sums.
func (t *fileTags) added(rep *pq.Batch) {
	if t.sums == nil {
		return
	}
	t.h.SumRows(t.sums, t.rep, rep.Len())
}
