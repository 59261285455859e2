package table

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// RowTagKey is the add-action tag in which a writer asked for it (RowTags) records a summary
// of the rows of the file: enough to tell, without reading the file, whether a recomputation
// of a group of rows equals what the file holds of it (DESIGN §5, "content hashes").
//
// The value is "r1 FINGERPRINT ROWS GROUP:HASH GROUP:HASH ...": the format version, a
// fingerprint of what the hashes depend on (the hash key, the table schema, the group and the
// excluded columns), the file's row count and, per group value (a window's start in
// microseconds) in ascending order, the sum modulo 2^64 of each of two 64-bit lanes of the
// keyed 128-bit hashes of its rows' exact encodings (pq.EncodeRow of every column but the
// excluded ones), as 32 hex digits. Sums are order-independent: a group spread over several
// files sums over their tags.
const RowTagKey = "medallion.rows"

// rowTagVersion is the tag format RowHasher writes and trusts.
const rowTagVersion = "r1"

// maxTagGroups bounds a tag's size (about 40 bytes a group in every log entry and checkpoint
// that names the file): a file of more groups gets no tag, and is read when it matters.
const maxTagGroups = 4096

// RowTags asks a writer to tag every data file it writes under RowTagKey.
type RowTags struct {
	// Group is the top-level column whose value groups the rows in the tag: an int64-kind
	// column (a timestamp) or a struct whose first field is one (a window: its start). Rows
	// whose group is null are counted, not hashed.
	Group string
	// Exclude are the top-level columns left out of a row's hash.
	Exclude []string
}

// RowHasher hashes a table's rows as its RowTags tags say, and reads the tags back. Its key
// comes from the table's id (metaData.id, set at creation, kept by every later commit), so
// that every process writing or reading the table hashes alike with no extra table property
// or commit. The key is in the log: the sums tell rows apart with the odds of a random
// 128-bit collision only for rows not crafted against this table's key.
type RowHasher struct {
	key   uint64
	fp    string
	group int
	cols  []int // the columns hashed, in schema order
	sel   []*pq.Column
	buf   []byte
}

// NewRowHasher returns the hasher of snap's table for rows of schema (the table's current
// schema: a tag written under another schema does not match its fingerprint).
func NewRowHasher(snap *txlog.Snapshot, schema *txlog.StructType, spec RowTags) (*RowHasher, error) {
	g := schema.FieldIndex(spec.Group)
	if g < 0 {
		return nil, fmt.Errorf("table: row tags: group column %s is not in the schema", spec.Group)
	}
	h := &RowHasher{group: g}
	for i, f := range schema.Fields {
		if !slices.Contains(spec.Exclude, f.Name) {
			h.cols = append(h.cols, i)
		}
	}
	id := xxh3.HashString128("medallion row hash " + rowTagVersion + "\x00" + snap.Metadata().ID)
	h.key = id.Lo ^ id.Hi
	ss, err := txlog.MarshalSchema(schema)
	if err != nil {
		return nil, err
	}
	fp := xxh3.HashString128Seed(ss+"\x00"+spec.Group+"\x00"+strings.Join(spec.Exclude, "\x00"), h.key).Bytes()
	h.fp = hex.EncodeToString(fp[:])
	return h, nil
}

// groupOf returns row i's group value (false: null).
func (h *RowHasher) groupOf(cols []*pq.Column, i int) (int64, bool) {
	c := cols[h.group]
	if c.IsNull(i) {
		return 0, false
	}
	if len(c.Children) > 0 {
		c = c.Children[0]
		if c.IsNull(i) {
			return 0, false
		}
	}
	if len(c.Int64) <= i {
		return 0, false
	}
	return c.Int64[i], true
}

// Row returns row i's group (ok false: null, not hashed) and its hash. cols are the row's
// columns in the table schema's order, conformed to it (pq.Conform).
func (h *RowHasher) Row(cols []*pq.Column, i int) (group int64, hash [2]uint64, ok bool) {
	group, ok = h.groupOf(cols, i)
	if !ok {
		return 0, hash, false
	}
	h.sel = h.sel[:0]
	for _, c := range h.cols {
		h.sel = append(h.sel, cols[c])
	}
	h.buf = pq.EncodeRow(h.buf[:0], h.sel, i)
	u := xxh3.Hash128Seed(h.buf, h.key)
	return group, [2]uint64{u.Lo, u.Hi}, true
}

// Hash is the hash Row gives a row whose encoding (pq.EncodeRow of the hashed columns: every
// column of the schema but the excluded ones, in schema order) is enc: for a caller that
// encodes its rows itself rather than build columns only to hash them.
func (h *RowHasher) Hash(enc []byte) [2]uint64 {
	u := xxh3.Hash128Seed(enc, h.key)
	return [2]uint64{u.Lo, u.Hi}
}

// SumRows adds the hashes of the first n rows of cols (as Row takes them) to sums.
func (h *RowHasher) SumRows(sums GroupSums, cols []*pq.Column, n int) {
	for i := range n {
		if g, hash, ok := h.Row(cols, i); ok {
			sums.Add(g, hash)
		}
	}
}

// GroupSums are per-group sums of row hashes.
type GroupSums map[int64][2]uint64

// Add adds hash to group g.
func (s GroupSums) Add(g int64, hash [2]uint64) {
	v := s[g]
	s[g] = [2]uint64{v[0] + hash[0], v[1] + hash[1]}
}

// Sub takes hash, added before, off group g's sum.
func (s GroupSums) Sub(g int64, hash [2]uint64) { s.Add(g, [2]uint64{-hash[0], -hash[1]}) }

// fileTag accumulates one data file's tag while it is written. A file holds few groups
// (gold: the windows a batch closed), whose rows come interleaved (gold is written in its
// groups' slot order): the sums are kept in a short slice searched from the group last hit,
// not a map; once the file has more groups than a tag may hold, rows are only counted.
type fileTag struct {
	rows   int64
	groups []int64
	sums   [][2]uint64
	last   int
	// overflow: the file gets no tag (more groups than a tag may hold, or sums handed to
	// WriteTagged that did not match its rows' groups).
	overflow bool
	index    map[int64]int // groups by value, once there are more than linearGroups
}

// linearGroups is how many groups fileTag searches one by one before it keeps a map.
const linearGroups = 16

func (t *fileTag) add(h *RowHasher, cols []*pq.Column, idx []int, n int) {
	t.rows += int64(n)
	if t.overflow {
		return
	}
	for k := range n {
		i := k
		if idx != nil {
			i = idx[k]
		}
		if g, hash, ok := h.Row(cols, i); ok && !t.addSum(g, hash) {
			return
		}
	}
}

// addSum adds s to group g's sum; false once the file has more groups than a tag may hold.
func (t *fileTag) addSum(g int64, s [2]uint64) bool {
	j := t.slot(g)
	if j < 0 {
		return false
	}
	t.sums[j][0] += s[0]
	t.sums[j][1] += s[1]
	return true
}

// slot returns g's index in t.groups, adding the group when it is new and last it; -1 once
// the file has more groups than a tag may hold (overflow).
func (t *fileTag) slot(g int64) int {
	j := t.find(g)
	if j < 0 {
		if len(t.groups) == maxTagGroups {
			t.overflow = true
			return -1
		}
		j = len(t.groups)
		t.groups, t.sums = append(t.groups, g), append(t.sums, [2]uint64{})
		if t.index != nil || len(t.groups) > linearGroups {
			if t.index == nil {
				t.index = make(map[int64]int, 2*linearGroups)
				for x, y := range t.groups {
					t.index[y] = x
				}
			}
			t.index[g] = j
		}
	}
	t.last = j
	return j
}

// find returns g's index in t.groups, or -1: the group last hit first, then the others.
func (t *fileTag) find(g int64) int {
	if t.last < len(t.groups) && t.groups[t.last] == g {
		return t.last
	}
	if t.index != nil {
		if j, ok := t.index[g]; ok {
			return j
		}
		return -1
	}
	for j, x := range t.groups {
		if x == g {
			return j
		}
	}
	return -1
}

// value is the tag's text, "" when it holds too many groups to be worth its place in the log.
func (t *fileTag) value(h *RowHasher) string {
	if t.overflow {
		return ""
	}
	sums := make(GroupSums, len(t.groups))
	for j, g := range t.groups {
		sums[g] = t.sums[j]
	}
	return formatRowTag(h.fp, t.rows, sums)
}

// formatRowTag writes a tag's text: its groups in ascending order.
func formatRowTag(fp string, rows int64, sums GroupSums) string {
	groups := slices.Sorted(maps.Keys(sums))
	var b strings.Builder
	b.WriteString(rowTagVersion + " " + fp + " " + strconv.FormatInt(rows, 10))
	for _, g := range groups {
		s := sums[g]
		fmt.Fprintf(&b, " %d:%016x%016x", g, s[0], s[1])
	}
	return b.String()
}

// Trusted returns the per-group sums of a's tag when the file's rows are exactly what the tag
// describes: the tag is of a known format, its fingerprint is this hasher's (same key, same
// schema), its row count equals the file's numRecords, and no deletion vector hides rows.
// Anything else (no tag: the file of another writer or an older build; a rewrite by another
// tool, which writes a new path without our tag) is not trusted, and the file must be read.
func (h *RowHasher) Trusted(a *txlog.Add) (GroupSums, bool) {
	fp, _, sums, ok := parseRowTag(a)
	if !ok || fp != h.fp {
		return nil, false
	}
	return sums, true
}

// parseRowTag reads a's tag: its fingerprint, row count and sums, ok only when the tag is of
// a known format and still describes the file (its row count is the file's numRecords, and no
// deletion vector hides rows).
func parseRowTag(a *txlog.Add) (fp string, rows int64, sums GroupSums, ok bool) {
	v, found := a.Tags[RowTagKey]
	if !found || a.DeletionVector != nil {
		return "", 0, nil, false
	}
	parts := strings.Fields(v)
	if len(parts) < 3 || parts[0] != rowTagVersion {
		return "", 0, nil, false
	}
	rows, err := strconv.ParseInt(parts[2], 10, 64)
	if n, known := numRecords(a); err != nil || !known || n != rows {
		return "", 0, nil, false
	}
	sums = make(GroupSums, len(parts)-3)
	for _, p := range parts[3:] {
		gs, hs, found := strings.Cut(p, ":")
		if !found || len(hs) != 32 {
			return "", 0, nil, false
		}
		g, err0 := strconv.ParseInt(gs, 10, 64)
		lo, err1 := strconv.ParseUint(hs[:16], 16, 64)
		hi, err2 := strconv.ParseUint(hs[16:], 16, 64)
		if err0 != nil || err1 != nil || err2 != nil {
			return "", 0, nil, false
		}
		sums.Add(g, [2]uint64{lo, hi})
	}
	return parts[1], rows, sums, true
}

// numRecords is the row count a's stats give (false: no stats, or none there).
func numRecords(a *txlog.Add) (int64, bool) {
	var st struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if a.Stats == "" || json.Unmarshal([]byte(a.Stats), &st) != nil || st.NumRecords == nil {
		return 0, false
	}
	return *st.NumRecords, true
}

// mergedRowTag is the tag of a file that holds exactly the rows of files (optimize's output
// of one bin), computed from their tags without reading a row: sums add over files. It is ""
// unless every file's tag still describes it and all share one fingerprint (one table key,
// one schema, one tag spec), and out's row count is theirs.
func mergedRowTag(files []*txlog.Add, out *txlog.Add) string {
	var fp0 string
	var rows int64
	merged := GroupSums{}
	for i, a := range files {
		fp, n, sums, ok := parseRowTag(a)
		if !ok || (i > 0 && fp != fp0) {
			return ""
		}
		fp0, rows = fp, rows+n
		for g, s := range sums {
			merged.Add(g, s)
		}
	}
	if n, ok := numRecords(out); len(files) == 0 || !ok || n != rows || len(merged) > maxTagGroups {
		return ""
	}
	return formatRowTag(fp0, rows, merged)
}

// setRowTags makes w tag its files as spec says (nil: no tags).
func (t *Table) setRowTags(w *DataWriter, snap *txlog.Snapshot, schema *txlog.StructType, spec *RowTags) error {
	if spec == nil {
		return nil
	}
	h, err := NewRowHasher(snap, schema, *spec)
	if err != nil {
		return err
	}
	w.SetRowTags(h)
	return nil
}
