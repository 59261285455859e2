//go:build race

package gold

// raceEnabled: the race detector adds allocations of its own, so the tests that count a
// function's allocations run without it (make go-test runs them again without -race).
const raceEnabled = true
