package bronze

// Report is what an ingest run did, for the one-line JSON summary and the logs.
type Report struct {
	Batches       int              `json:"batches"`
	Files         int              `json:"files"`
	Lines         int64            `json:"lines"`
	Rows          int64            `json:"rows"`
	Rejected      int64            `json:"rejected"`
	BlankLines    int64            `json:"blankLines"`
	RejectsBy     map[string]int64 `json:"rejectsByReason"`
	Bytes         int64            `json:"bytes"`
	DurationMs    int64            `json:"durationMs"`
	RowsPerSecond float64          `json:"rowsPerSecond"`
	// ChangedObjects are objects read again because they changed after an earlier read: what
	// was appended, or, for those also in RewrittenObjects, the whole new content.
	ChangedObjects   []string `json:"changedObjects,omitempty"`
	RewrittenObjects []string `json:"rewrittenObjects,omitempty"`
	BronzeVersion    int64    `json:"bronzeVersion"`
	// Kafka is set when the landing is a Kafka topic (KafkaIngester).
	Kafka *KafkaReport `json:"kafka,omitempty"`

	ends map[string]readEnd // per key read by a batch, for its commit record
}

// add adds st's counts to r (ObjectStats.merge does the adding).
func (r *Report) add(st ObjectStats) {
	sum := r.stats()
	sum.merge(st)
	r.Lines, r.Rows, r.Rejected, r.BlankLines, r.Bytes, r.RejectsBy = sum.Lines, sum.Rows, sum.Rejected, sum.BlankLines, sum.Bytes, sum.ByReason
}

// stats are r's counts, as the decoder keeps them.
func (r *Report) stats() ObjectStats {
	return ObjectStats{Lines: r.Lines, Rows: r.Rows, Rejected: r.Rejected, BlankLines: r.BlankLines, Bytes: r.Bytes, ByReason: r.RejectsBy}
}

// merge adds o's counts (not its files, batches or timings) to r.
func (r *Report) merge(o Report) {
	r.add(o.stats())
}

// Add adds o to r: what two ingests did together (their batches, files and counts; not
// timings or lists).
func (r *Report) Add(o Report) {
	r.Batches += o.Batches
	r.Files += o.Files
	r.merge(o)
}

// addReasons adds the counts by reason of src to *dst, making it when needed.
func addReasons(dst *map[string]int64, src map[string]int64) {
	for k, v := range src {
		if *dst == nil {
			*dst = map[string]int64{}
		}
		(*dst)[k] += v
	}
}
