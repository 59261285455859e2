// Package kafka is the Kafka client side that several stages share, on franz-go: the connection
// settings (brokers; TLS and SASL read from the environment, never from the config file), the
// offsets of topics and the reading of an exact offset range of a partition, consumer lag,
// administration (creating a topic, committing a monitoring consumer group's offsets), an
// asynchronous producer that keeps the first failure, the transactional producer of sinks
// (TxnProducer: each transaction also commits the producer's position as a group offset) and a
// read_committed reader of a whole topic (ReadCommitted).
//
// It knows nothing about tables or checkpoints: bronze turns offset ranges into the bronze
// table exactly once (its checkpoint is the position), gen produces the synthetic workload, and
// jobs and report show the lag. Offsets are immutable, so a range read twice yields the same
// records; ReadRange fails with ErrDataLoss rather than skip an offset that is gone, and with
// ErrStalled rather than wait forever for a broker that does not answer.
//
// Crash guarantees: nothing here keeps state in the lake or on disk. A monitoring consumer
// group's offsets are never read back; a process killed at any instant loses nothing here that
// its caller's checkpoint does not hold. A TxnProducer's position lives in Kafka, committed in
// the same transaction as its records: after a kill, the next producer with the same
// transactional id fences the old one (the broker aborts its open transaction) and reads the
// position the last committed transaction left, with require_stable.
package kafka
