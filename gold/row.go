package gold

// The gold-row contract: the columns of a gold table, which the stream writes, merge-late and
// replay rewrite and the reports read. In order: ColWindow (struct<start: timestamp, end:
// timestamp>), the group-by columns (their keys in table's key encoding while in state), each
// aggregate (avg followed by <as>SuffixSum and <as>SuffixCount, sketches followed by
// <as>SuffixSketch holding AggValue.AppendBinary), then ColLateRows.
const (
	// ColWindow is gold's window struct<start: timestamp, end: timestamp>.
	ColWindow = "window"
	// ColLateRows counts the late rows a gold row absorbed: 0 from the stream, raised by
	// merge-late.
	ColLateRows = "late_rows"
	// SuffixSum and SuffixCount name the columns that keep an avg mergeable (avg_x_sum,
	// avg_x_count); SuffixSketch names a sketch aggregate's binary state (AggValue.AppendBinary).
	SuffixSum    = "_sum"
	SuffixCount  = "_count"
	SuffixSketch = "_sketch"
)
