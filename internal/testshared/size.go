package testshared

import "os"

// Long reports whether MEDALLION_LONG=1 asks for the long modes: more seeds, rounds, kills and
// rows in the randomized and crash loops (docs/testing.md lists them).
func Long() bool { return os.Getenv("MEDALLION_LONG") == "1" }

// Sized returns full, or underRace when the binary runs under the race detector and the long
// mode is off. A test picks underRace so that it reaches the same code paths as at full size
// (every branch the size feeds: a batch boundary, a compaction, a spill), only fewer times:
// `make test` runs the race-sized workload, `make test-quick` (no -race) and MEDALLION_LONG=1
// the full one.
func Sized(full, underRace int) int {
	if Race && !Long() {
		return underRace
	}
	return full
}
