package report

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/config"
)

// testGraph is a two-source pipeline with a join, three golds and two derived levels (13
// nodes, 12 tables): the size the status page must keep readable.
func testGraph() *GraphStatus {
	wm := time.Date(2024, 5, 4, 11, 50, 0, 0, time.UTC)
	n := func(kind, name, path string, version, behind, late int64, up string) NodeStatus {
		return NodeStatus{GraphNode: config.GraphNode{ID: kind + ":" + name, Kind: kind, Name: name, Path: path},
			Exists: version >= 0, Version: version, Behind: behind, LatePending: late, Upstream: up}
	}
	g := &GraphStatus{Nodes: []NodeStatus{
		n(config.NodeLanding, "orders", "landing/orders", -1, -1, -1, ""),
		n(config.NodeBronze, "orders", "bronze/orders", 40, -1, -1, ""),
		n(config.NodeSilver, "orders", "silver/orders", 38, 2, -1, "bronze"),
		n(config.NodeLanding, "clicks", "landing/clicks", -1, -1, -1, ""),
		n(config.NodeBronze, "clicks", "bronze/clicks", 7, -1, -1, ""),
		n(config.NodeSilver, "clicks", "silver/clicks", 7, 0, -1, "bronze"),
		n(config.NodeJoin, "orders_clicks", "joined/orders_clicks", 5, 0, -1, "silver orders + clicks"),
		n(config.NodeGold, "orders_5m", "gold/orders_5m", 30, 2, 17, "bronze"),
		n(config.NodeGold, "clicks_5m", "gold/clicks_5m", 6, 0, 0, "bronze"),
		n(config.NodeGold, "conversions_a_very_long_name_5m", "gold/conv_5m", -1, -1, -1, ""),
		n(config.NodeDerived, "orders_1h", "gold/orders_1h", 12, 1, -1, "gold orders_5m"),
		n(config.NodeDerived, "orders_1d", "gold/orders_1d", 3, 0, -1, "gold orders_1h"),
	}}
	g.Nodes[7].Watermark, g.Nodes[7].Detail = wm, "tumbling 5m by region"
	g.Nodes[10].Level, g.Nodes[11].Level = 2, 3
	for _, e := range [][2]string{{"landing:orders", "bronze:orders"}, {"bronze:orders", "silver:orders"},
		{"landing:clicks", "bronze:clicks"}, {"bronze:clicks", "silver:clicks"},
		{"silver:orders", "join:orders_clicks"}, {"silver:clicks", "join:orders_clicks"},
		{"silver:orders", "gold:orders_5m"}, {"silver:clicks", "gold:clicks_5m"},
		{"join:orders_clicks", "gold:conversions_a_very_long_name_5m"},
		{"gold:orders_5m", "derived:orders_1h"}, {"derived:orders_1h", "derived:orders_1d"}} {
		g.Edges = append(g.Edges, config.GraphEdge{From: e[0], To: e[1]})
	}
	return g
}

// TestGraphSVGLayout: the drawing is well-formed XML, one box per node, every edge runs left
// to right from one layer to a later one, no two boxes overlap, and it is pinned byte for byte.
func TestGraphSVGLayout(t *testing.T) {
	g := testGraph()
	s := g.SVG()
	dec := xml.NewDecoder(strings.NewReader(s))
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v", err)
			}
			break
		}
	}
	rect := regexp.MustCompile(`<g class="node" id="node-([^"]+)" data-kind="[^"]+"><title>[^<]*</title><rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"`)
	type box struct{ x, y, w, h int }
	boxes := map[string]box{}
	for _, m := range rect.FindAllStringSubmatch(s, -1) {
		x, _ := strconv.Atoi(m[2])
		y, _ := strconv.Atoi(m[3])
		w, _ := strconv.Atoi(m[4])
		h, _ := strconv.Atoi(m[5])
		boxes[strings.Replace(m[1], "-", ":", 1)] = box{x, y, w, h}
	}
	if len(boxes) != len(g.Nodes) {
		t.Fatalf("%d boxes, want %d", len(boxes), len(g.Nodes))
	}
	for _, e := range g.Edges {
		a, z := boxes[e.From], boxes[e.To]
		if a.x+a.w >= z.x {
			t.Errorf("edge %s -> %s does not run left to right: %+v %+v", e.From, e.To, a, z)
		}
	}
	for ida, a := range boxes {
		for idb, b := range boxes {
			if ida < idb && a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
				t.Errorf("%s and %s overlap", ida, idb)
			}
		}
	}
	if n := strings.Count(s, `class="edge"`); n != len(g.Edges) {
		t.Errorf("%d edges drawn, want %d", n, len(g.Edges))
	}
	for _, want := range []string{">version 30<", ">2 versions behind<", ">late pending 17<", ">no late rows pending<",
		">no table yet<", ">1 version behind<", "1 gold orders_5m version behind", "conversions_a_very_long…", "windows complete to 2024-05-04 11:50:00 UTC"} {
		if !strings.Contains(s, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	golden(t, "graph.svg", []byte(s))
}

// TestGraphText: one line per node with the same figures as the drawing.
func TestGraphText(t *testing.T) {
	var b bytes.Buffer
	if err := testGraph().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "graph.txt", b.Bytes())
	if n := strings.Count(b.String(), "\n"); n != len(testGraph().Nodes) {
		t.Errorf("%d lines, want one per node", n)
	}
}
