package config

import (
	"strings"
	"testing"
)

// change_data_feed on a gold or join entry: on by default, false turns it off, and anything
// but a boolean is an error naming the key and its line.
func TestChangeDataFeedKey(t *testing.T) {
	p := mustParse(t, twoSources)
	if !p.Gold[0].ChangeFeed() || !p.Gold[1].ChangeFeed() || !p.Joins[0].ChangeFeed() {
		t.Fatal("the change data feed is not on by default")
	}
	off := strings.Replace(twoSources, "    time: {lower: 0s, upper: 1h}\n", "    time: {lower: 0s, upper: 1h}\n    change_data_feed: false\n", 1)
	off = strings.Replace(off, "  - name: g1\n", "  - name: g1\n    change_data_feed: false\n", 1)
	p = mustParse(t, off)
	if p.Gold[0].ChangeFeed() || !p.Gold[1].ChangeFeed() || p.Joins[0].ChangeFeed() {
		t.Fatalf("change_data_feed: false not honoured: gold %v %v, join %v", p.Gold[0].ChangeFeed(), p.Gold[1].ChangeFeed(), p.Joins[0].ChangeFeed())
	}
	if !strings.Contains(p.Redacted(), "change_data_feed: false") {
		t.Error("the effective config lost change_data_feed: false")
	}
	bad := strings.Replace(twoSources, "  - name: g1\n", "  - name: g1\n    change_data_feed: sometimes\n", 1)
	_, err := Parse([]byte(bad), "p.yaml")
	if err == nil {
		t.Fatal("change_data_feed: sometimes accepted")
	}
	errs := fieldErrors(t, err)
	line := strings.Count(bad[:strings.Index(bad, "change_data_feed")], "\n") + 1
	if len(errs) != 1 || errs[0].Path != "gold[0].change_data_feed" || errs[0].Line != line {
		t.Fatalf("want one error at gold[0].change_data_feed line %d, got %v", line, err)
	}
}
