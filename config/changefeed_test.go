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

// tables.change_data_feed (the top-level source's, or a sources: entry's): off by default,
// true turns it on for that source's tables alone, anything but a boolean is an error naming
// the key and its line.
func TestTablesChangeDataFeedKey(t *testing.T) {
	p := mustParse(t, twoSources)
	for _, s := range p.AllSources() {
		if s.Tables.ChangeDataFeed {
			t.Fatalf("source %s: the change data feed of bronze/silver is on by default", s.Name)
		}
	}
	on := strings.Replace(twoSources, "  - name: clicks\n", "  - name: clicks\n    tables: {change_data_feed: true}\n", 1)
	p = mustParse(t, on)
	srcs := p.AllSources()
	if srcs[0].Tables.ChangeDataFeed || !srcs[1].Tables.ChangeDataFeed {
		t.Fatalf("tables.change_data_feed: true on clicks gives impressions %v, clicks %v", srcs[0].Tables.ChangeDataFeed, srcs[1].Tables.ChangeDataFeed)
	}
	if v, ok := p.ForSource("clicks"); !ok || !v.Tables.ChangeDataFeed {
		t.Fatal("the clicks view lost tables.change_data_feed")
	}
	if !strings.Contains(p.Redacted(), "change_data_feed: true") {
		t.Error("the effective config lost tables.change_data_feed: true")
	}
	top := mustParse(t, "tables: {change_data_feed: true}\n"+twoSources)
	if srcs := top.AllSources(); !srcs[0].Tables.ChangeDataFeed || srcs[1].Tables.ChangeDataFeed {
		t.Fatalf("top-level tables.change_data_feed: true gives impressions %v, clicks %v", srcs[0].Tables.ChangeDataFeed, srcs[1].Tables.ChangeDataFeed)
	}
	if top.Tables.Silver != "silver/events" {
		t.Fatalf("tables: {change_data_feed: true} lost the default silver path: %q", top.Tables.Silver)
	}
	for _, c := range []struct{ yaml, path string }{
		{"tables: {change_data_feed: sometimes}\n" + twoSources, "tables.change_data_feed"},
		{strings.Replace(twoSources, "  - name: clicks\n", "  - name: clicks\n    tables: {change_data_feed: 1}\n", 1), "sources[0].tables.change_data_feed"},
	} {
		_, err := Parse([]byte(c.yaml), "p.yaml")
		if err == nil {
			t.Fatalf("%s accepted", c.path)
		}
		errs := fieldErrors(t, err)
		line := strings.Count(c.yaml[:strings.Index(c.yaml, "change_data_feed")], "\n") + 1
		if len(errs) != 1 || errs[0].Path != c.path || errs[0].Line != line {
			t.Fatalf("want one error at %s line %d, got %v", c.path, line, err)
		}
	}
}
