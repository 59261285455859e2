//go:build !unix

package silver

func cpuNanos() int64 { return 0 }
