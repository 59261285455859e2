package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// markdownLink is an inline link [text](target); targets with spaces or parentheses are not used here.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// headingAnchors returns the GitHub anchors of a Markdown file's headings (outside fenced code):
// lower case, punctuation other than - and _ dropped, spaces turned into -.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	fenced := false
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		slug := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
		anchors[slug] = true
	}
	return anchors
}

// TestDocsLinksResolve checks every relative link of README.md and docs/*.md: the README's
// reference moved into docs/, and a link to a page or a heading that moved again would lead a
// reader nowhere. Each link must name a file (or folder) of the repository and, with #anchor, a
// heading of that Markdown file.
func TestDocsLinksResolve(t *testing.T) {
	root := repoRoot(t)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages under docs/", len(pages))
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, m := range markdownLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
			}
			checked++
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: no such file %s", rel, target, path)
				continue
			}
			if anchor == "" {
				continue
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: link %s: %v", rel, target, err)
				continue
			}
			if !headingAnchors(string(text))[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", rel, target, path, anchor)
			}
		}
	}
	if checked < 30 {
		t.Fatalf("checked only %d links: the link pattern is broken", checked)
	}
}
