package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/medallion-lake/medallion/kafka"
)

// KafkaLag is the consumer lag of a Kafka landing: per partition, the log end offset minus the
// next offset ingest will read (committed batches only). The report does not talk to brokers:
// jobs fills it (jobs.KafkaLagReport), and Problem says why it could not.
type KafkaLag struct {
	Topics     []string             `json:"topics"`
	Partitions []kafka.PartitionLag `json:"partitions"`
	Total      int64                `json:"total"`
	Problem    string               `json:"problem,omitempty"`
}

// WriteText prints the lag, one line per partition.
func (k *KafkaLag) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("\nKafka consumer lag (log end offset - next offset to ingest), topics %v\n", k.Topics)
	if k.Problem != "" {
		p("not measured: %s\n", k.Problem)
		return bw.Flush()
	}
	p("%-30s %9s %14s %14s %12s\n", "topic", "partition", "ingested to", "end", "lag")
	for _, l := range k.Partitions {
		next := "-"
		if l.Committed >= 0 {
			next = groupDigits(l.Committed)
		}
		p("%-30s %9d %14s %14s %12s\n", l.Topic, l.Partition, next, groupDigits(l.End), groupDigits(l.Lag))
	}
	p("total lag %s records\n", groupDigits(k.Total))
	return bw.Flush()
}
