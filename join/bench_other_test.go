//go:build !unix

package join

// cpuNanos is not measured off unix; the CPU metrics then read 0.
func cpuNanos() int64 { return 0 }
