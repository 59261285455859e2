package textdist

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"length", "length", 0},
		{"lenght", "length", 1}, // a swap of adjacent letters counts one
		{"lengt", "length", 1},
		{"upper", "lower", 3},
		{"substr", "substring", 3},
		{"kitten", "sitting", 3},
		{string(make([]byte, 65)), "a", 1 << 20},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}
