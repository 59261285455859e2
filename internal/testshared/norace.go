//go:build !race

package testshared

// Race reports whether the test binary was built with -race (see race.go).
const Race = false
