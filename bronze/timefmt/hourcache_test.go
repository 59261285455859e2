package timefmt

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestHourCacheMatches: through the cache, every text parses (or fails) as it does without it,
// whatever the text before it, including texts that share the last one's date and hour but
// are not timestamps.
func TestHourCacheMatches(t *testing.T) {
	texts := []string{
		"2024-05-01T12:07:00Z", "2024-05-01T12:07:00.123456Z", "2024-05-01T12:59:59.9999999+02:00",
		"2024-05-01T12:60:00Z", "2024-05-01T12:07:60Z", "2024-05-01T12x07:00Z", "2024-05-01T12:07x00Z",
		"2024-05-01T12:0a:00Z", "2024-05-01T12:07:00", "2024-05-01T12:07:00.Z", "2024-05-01T12:07:00+2",
		"2024-05-01T12", "2024-05-01T12:07:0", "2024-05-01 12:07:00", "2024-05-01T12:07:00-0530",
		"2024-02-30T12:07:00Z", "2024-02-29T23:00:00Z", "2023-02-29T23:00:00Z", "0001-01-01T00:00:00Z",
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20_000 {
		texts = append(texts, fmt.Sprintf("2026-12-%02dT%02d:%02d:%02d.%06dZ", 1+r.IntN(31), r.IntN(25), r.IntN(61), r.IntN(61), r.IntN(1_000_000)))
	}
	var c HourCache
	for k := range 3 * len(texts) {
		b := []byte(texts[r.IntN(len(texts))])
		if k < len(texts) {
			b = []byte(texts[k])
		}
		want, werr := ParseTimestampMicros(b)
		got, gerr := c.ParseTimestampMicros(b)
		if got != want || (werr == nil) != (gerr == nil) {
			t.Fatalf("%s: cached %d, %v; uncached %d, %v", b, got, gerr, want, werr)
		}
	}
}
