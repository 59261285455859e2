package stream

import "github.com/medallion-lake/medallion/pq"

// appendNulls appends a null to each of cols: the side an output row lacks.
func appendNulls(cols []*pq.Column) {
	for _, c := range cols {
		c.AppendNull()
	}
}
