package report

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/config"
)

// The graph drawing: one column per layer, left to right (a node's layer is the longest path
// to it from a node without inputs: landing, bronze, silver, then joins and golds, then the
// derived levels), nodes in config order down each column, edges as curves from a node's
// right side to the next one's left. Inline SVG like the charts: no script, nothing fetched.
const (
	nodeW, nodeH     = 164, 70
	nodeGapX         = 34
	nodeGapY         = 14
	graphMargin      = 8
	nodeTextX        = 8
	nodeLineH        = 15
	nodeNameMaxRunes = 24
)

// nodeColors are each kind's fill and stroke.
var nodeColors = map[string][2]string{
	config.NodeLanding: {"#f2f2f2", "#999999"},
	config.NodeBronze:  {"#f6e3d1", "#a0522d"},
	config.NodeSilver:  {"#e8edf2", "#708090"},
	config.NodeJoin:    {"#ece4f3", "#7b5ea7"},
	config.NodeGold:    {"#fcf1c9", "#b8860b"},
	config.NodeDerived: {"#fdf7e1", "#c9a227"},
}

// layers is each node's column (see above) and the number of columns.
func (g *GraphStatus) layers() (map[string]int, int) {
	col := map[string]int{}
	for _, n := range g.Nodes {
		col[n.ID] = 0
	}
	// Longest path by relaxation: the graph is a DAG of a few dozen nodes at most.
	for range g.Nodes {
		moved := false
		for _, e := range g.Edges {
			if c, ok := col[e.From]; ok && col[e.To] < c+1 {
				col[e.To], moved = c+1, true
			}
		}
		if !moved {
			break
		}
	}
	cols := 0
	for _, c := range col {
		cols = max(cols, c+1)
	}
	return col, cols
}

// nodeLines are the text lines of a node's box: name and kind, version, freshness, late rows.
func nodeLines(n NodeStatus) []string {
	name := n.Name + " (" + n.Kind + ")"
	if r := []rune(name); len(r) > nodeNameMaxRunes {
		name = string(r[:nodeNameMaxRunes-1]) + "…"
	}
	lines := []string{name}
	switch {
	case n.Kind == config.NodeLanding:
		lines = append(lines, "input")
	case !n.Exists:
		lines = append(lines, "no table yet")
	default:
		lines = append(lines, "version "+strconv.FormatInt(n.Version, 10))
	}
	switch {
	case n.Behind == 0:
		lines = append(lines, "up to date")
	case n.Behind > 0:
		// Short, to fit the box; the tooltip says of what.
		lines = append(lines, groupDigits(n.Behind)+" "+plural(n.Behind, "version")+" behind")
	}
	if n.LatePending > 0 {
		lines = append(lines, "late pending "+groupDigits(n.LatePending))
	} else if n.LatePending == 0 {
		lines = append(lines, "no late rows pending")
	}
	return lines
}

// Freshness is the node's freshness in words ("" when not measured): the upstream versions it
// has not consumed and the watermark its windows are complete to.
func (n NodeStatus) Freshness() string {
	if n.Behind < 0 {
		return ""
	}
	s := "up to date"
	if n.Behind > 0 {
		s = groupDigits(n.Behind) + " " + n.Upstream + " " + plural(n.Behind, "version") + " behind"
	}
	return s
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// watermarkText is the watermark for a node's tooltip and the text report ("" when none).
func (n NodeStatus) watermarkText() string {
	if n.Watermark.IsZero() {
		return ""
	}
	return n.Watermark.UTC().Format(time.DateTime)
}

// SVG draws the graph (see above).
func (g *GraphStatus) SVG() string {
	col, cols := g.layers()
	rows := make([]int, cols)
	type pos struct{ x, y int }
	at := map[string]pos{}
	for _, n := range g.Nodes {
		c := col[n.ID]
		at[n.ID] = pos{graphMargin + c*(nodeW+nodeGapX), graphMargin + rows[c]*(nodeH+nodeGapY)}
		rows[c]++
	}
	maxRows := 0
	for _, r := range rows {
		maxRows = max(maxRows, r)
	}
	w := 2*graphMargin + cols*(nodeW+nodeGapX) - nodeGapX
	h := 2*graphMargin + maxRows*(nodeH+nodeGapY) - nodeGapY
	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" font-family="Helvetica, Arial, sans-serif" font-size="11" role="img" aria-label="pipeline graph">`, w, h, w, h)
	f(`<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#777"/></marker></defs>`)
	f(`<rect width="%d" height="%d" fill="#ffffff"/>`, w, h)
	for _, e := range g.Edges {
		a, ok1 := at[e.From]
		z, ok2 := at[e.To]
		if !ok1 || !ok2 {
			continue
		}
		x1, y1 := a.x+nodeW, a.y+nodeH/2
		x2, y2 := z.x, z.y+nodeH/2
		dx := (x2 - x1) / 2
		f(`<path class="edge" data-from="%s" data-to="%s" d="M%d,%d C%d,%d %d,%d %d,%d" fill="none" stroke="#777" stroke-width="1.2" marker-end="url(#arrow)"/>`,
			esc(e.From), esc(e.To), x1, y1, x1+dx, y1, x2-dx, y2, x2, y2)
	}
	for _, n := range g.Nodes {
		p := at[n.ID]
		c, ok := nodeColors[n.Kind]
		if !ok {
			c = nodeColors[config.NodeLanding]
		}
		stroke, width := c[1], "1.2"
		if n.Behind > 0 || n.LatePending > 0 {
			stroke, width = "#D55E00", "2"
		}
		f(`<g class="node" id="node-%s" data-kind="%s">`, esc(strings.ReplaceAll(n.ID, ":", "-")), esc(n.Kind))
		tip := n.Name + ": " + n.Path
		if n.Detail != "" {
			tip += " (" + n.Detail + ")"
		}
		if f := n.Freshness(); f != "" && n.Behind > 0 {
			tip += "; " + f
		}
		if wm := n.watermarkText(); wm != "" {
			tip += "; windows complete to " + wm + " UTC"
		}
		f(`<title>%s</title>`, esc(tip))
		f(`<rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="%s" stroke="%s" stroke-width="%s"/>`, p.x, p.y, nodeW, nodeH, c[0], stroke, width)
		for i, line := range nodeLines(n) {
			attr := ""
			switch {
			case i == 0:
				attr = ` font-weight="bold"`
			case strings.HasPrefix(line, "late pending") || strings.HasSuffix(line, "behind"):
				attr = ` fill="#b00"`
			}
			f(`<text x="%d" y="%d"%s>%s</text>`, p.x+nodeTextX, p.y+16+i*nodeLineH, attr, esc(line))
		}
		f(`</g>`)
	}
	f(`</svg>`)
	return b.String()
}

// MarshalJSON writes the graph for the report's JSON: nodes with their status, then edges.
func (g *GraphStatus) MarshalJSON() ([]byte, error) {
	type node struct {
		ID          string `json:"id"`
		Kind        string `json:"kind"`
		Name        string `json:"name"`
		Path        string `json:"path"`
		Detail      string `json:"detail,omitempty"`
		Level       int    `json:"level,omitempty"`
		Exists      bool   `json:"exists"`
		Version     int64  `json:"version"`
		Behind      *int64 `json:"behind_versions,omitempty"`
		Upstream    string `json:"upstream,omitempty"`
		Watermark   string `json:"watermark,omitempty"`
		LatePending *int64 `json:"late_rows_pending,omitempty"`
	}
	type edge struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	out := struct {
		Nodes []node `json:"nodes"`
		Edges []edge `json:"edges"`
	}{Nodes: []node{}, Edges: []edge{}}
	for _, n := range g.Nodes {
		o := node{ID: n.ID, Kind: n.Kind, Name: n.Name, Path: n.Path, Detail: n.Detail, Level: n.Level, Exists: n.Exists,
			Version: n.Version, Upstream: n.Upstream}
		if n.Behind >= 0 {
			o.Behind = &n.Behind
		}
		if n.LatePending >= 0 {
			o.LatePending = &n.LatePending
		}
		if !n.Watermark.IsZero() {
			o.Watermark = n.Watermark.UTC().Format(time.RFC3339)
		}
		out.Nodes = append(out.Nodes, o)
	}
	for _, e := range g.Edges {
		out.Edges = append(out.Edges, edge{From: e.From, To: e.To})
	}
	return json.Marshal(out)
}
