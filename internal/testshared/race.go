//go:build race

package testshared

// Race reports whether the test binary was built with -race. The race detector makes a test's
// own goroutines five to twenty times dearer in CPU, so the randomized and workload-sized tests
// run a smaller size under it (Sized), the way Go's standard library tests do: the concurrency
// the detector watches is the same at any size, and the full size still runs without it.
const Race = true
