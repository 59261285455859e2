package txlog

import (
	"strings"
	"testing"
)

// FuzzParseInterval: table properties such as delta.logRetentionDuration are user text; no
// input may panic, and an accepted interval is never negative.
func FuzzParseInterval(f *testing.F) {
	for _, s := range []string{"interval 30 days", "interval 7 days", "1 week", "12 hours", "interval 1 millisecond", "0 seconds", "interval -1 days", "interval 1 month", "interval", "", "INTERVAL 2 WEEKS", "interval 1 days extra"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseInterval(s)
		if err != nil {
			if !strings.Contains(err.Error(), "interval") {
				t.Fatalf("error %q does not say what it was parsing", err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("%q parsed to a negative duration %v", s, d)
		}
	})
}
