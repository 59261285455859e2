package dtpattern

import "testing"

func TestQuoted(t *testing.T) {
	for _, c := range []struct {
		p, text string
		start   int
		end     int
		ok      bool
	}{
		{p: "'T'", text: "T", end: 3, ok: true},
		{p: "yyyy'T'HH", start: 4, text: "T", end: 7, ok: true},
		{p: "'o''clock' h", text: "o'clock", end: 10, ok: true},
		{p: "''", text: "", end: 2, ok: true},
		{p: "'''x'", text: "'x", end: 5, ok: true},
		{p: "'abc", end: 4},
		{p: "'a''", end: 4},
	} {
		text, end, ok := Quoted(c.p, c.start)
		if text != c.text || end != c.end || ok != c.ok {
			t.Errorf("Quoted(%q, %d) = %q, %d, %v; want %q, %d, %v", c.p, c.start, text, end, ok, c.text, c.end, c.ok)
		}
	}
}
