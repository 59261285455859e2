//go:build !race

package gold

const raceEnabled = false
