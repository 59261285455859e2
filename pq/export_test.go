package pq

// Internals that the external tests (package pq_test) check directly.
var (
	MinMaxBytes = minMaxBytes
	TruncateMin = truncateMin
	TruncateMax = truncateMax
)
