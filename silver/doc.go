// Package silver owns everything between bronze and the operators: validation (reject
// reasons, required columns, event time, future skew), exact deduplication (the key state,
// its delta codec, and the look-up of old keys in silver through the bloom filters of its
// files), and the silver and quarantine schemas and writers.
//
// The stream runner drives it batch by batch; silver keeps nothing between calls but the dedup
// state, which the runner persists in its checkpoint. Crash guarantees: every table write
// carries the batch's txn and is skipped when the table already holds it; the look-up leaves
// out the files a previous attempt of the same batch wrote, and the dedup logic is
// deterministic, so a batch re-run after a crash makes the same decisions and writes the same
// rows.
package silver
