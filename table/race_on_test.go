//go:build race

package table_test

// raceEnabled: the race detector slows the writer and readers about tenfold, so randomized
// tests shrink their inputs under it; the full sizes run without it (and in the interop suite).
const raceEnabled = true
