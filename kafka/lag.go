package kafka

import "sort"

// PartitionLag is one partition's consumer lag: the log end offset minus the next offset the
// reader will read (for bronze: committed batches only).
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"` // next offset to read; -1: nothing read yet
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
}

// Lags is the lag of every partition of ends (log end offsets) against next (the next offset to
// read of the partitions read so far), in (topic, partition) order. A partition never read lags
// by its end offset.
func Lags(ends, next map[TopicPartition]int64) []PartitionLag {
	out := make([]PartitionLag, 0, len(ends))
	for k, end := range ends {
		l := PartitionLag{Topic: k.Topic, Partition: k.Partition, End: end, Committed: -1, Lag: end}
		if pos, ok := next[k]; ok {
			l.Committed, l.Lag = pos, max(0, end-pos)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		return TopicPartition{out[i].Topic, out[i].Partition}.Less(TopicPartition{out[j].Topic, out[j].Partition})
	})
	return out
}

// TotalLag is the sum of the partitions' lag.
func TotalLag(lags []PartitionLag) int64 {
	var total int64
	for _, l := range lags {
		total += l.Lag
	}
	return total
}
