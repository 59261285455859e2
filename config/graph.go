package config

import (
	"fmt"
	"strings"
)

// Node kinds of the pipeline graph.
const (
	NodeLanding = "landing"
	NodeBronze  = "bronze"
	NodeSilver  = "silver"
	NodeJoin    = "join"
	NodeGold    = "gold"
	NodeDerived = "derived"
)

// GraphNode is one table (or the landing prefix) of the pipeline graph.
type GraphNode struct {
	// ID is unique in the graph: kind + ":" + name.
	ID string
	// Kind is one of the Node* constants.
	Kind string
	// Name is the source, join or gold name.
	Name string
	// Path is the table path under the lake (the landing prefix, or the Kafka topics).
	Path string
	// Detail says what the node computes ("tumbling 5m by event_type"), "" when nothing.
	Detail string
	// Level is a gold's distance from the stream: 1 for a gold over a source or join, 2 for
	// a table derived from it, and so on; 0 for the other kinds.
	Level int
}

// GraphEdge is one flow: the rows of From go into To.
type GraphEdge struct{ From, To string }

// Graph is what the config declares as tables and flows: each source's landing, bronze and
// silver, the joins, the golds over sources and joins, and the tables derived from golds,
// each kind in config order.
type Graph struct {
	Nodes []GraphNode
	Edges []GraphEdge
}

// Graph builds the pipeline graph (golds on a cycle, which Validate refuses, have no level).
func (p *Pipeline) Graph() Graph {
	var g Graph
	edge := func(from, to string) { g.Edges = append(g.Edges, GraphEdge{From: from, To: to}) }
	for _, s := range p.AllSources() {
		land := s.Landing.Path
		if s.Landing.Kind == LandingKafka && s.Landing.Kafka != nil {
			land = "kafka:" + strings.Join(s.Landing.Kafka.TopicList(), ",")
		}
		g.Nodes = append(g.Nodes,
			GraphNode{ID: NodeLanding + ":" + s.Name, Kind: NodeLanding, Name: s.Name, Path: land},
			GraphNode{ID: NodeBronze + ":" + s.Name, Kind: NodeBronze, Name: s.Name, Path: s.Tables.Bronze},
			GraphNode{ID: NodeSilver + ":" + s.Name, Kind: NodeSilver, Name: s.Name, Path: s.Tables.Silver})
		edge(NodeLanding+":"+s.Name, NodeBronze+":"+s.Name)
		edge(NodeBronze+":"+s.Name, NodeSilver+":"+s.Name)
	}
	for _, j := range p.Joins {
		id := NodeJoin + ":" + j.Name
		g.Nodes = append(g.Nodes, GraphNode{ID: id, Kind: NodeJoin, Name: j.Name, Path: j.Table,
			Detail: fmt.Sprintf("%s join of %s and %s", j.Type, j.Left, j.Right)})
		edge(NodeSilver+":"+j.Left, id)
		edge(NodeSilver+":"+j.Right, id)
	}
	levels := p.goldLevels()
	for _, gd := range p.Gold {
		n := GraphNode{ID: NodeGold + ":" + gd.Name, Kind: NodeGold, Name: gd.Name, Path: gd.Table,
			Detail: goldDetail(gd), Level: levels[gd.Name]}
		switch up, derived := p.UpstreamGold(gd); {
		case derived:
			n.Kind = NodeDerived
			edge(NodeGold+":"+up.Name, n.ID)
		default:
			src := p.GoldSource(gd)
			if _, ok := p.JoinByName(src); ok {
				edge(NodeJoin+":"+src, n.ID)
			} else {
				edge(NodeSilver+":"+src, n.ID)
			}
		}
		g.Nodes = append(g.Nodes, n)
	}
	return g
}

// goldLevels is each gold's level (see GraphNode.Level).
func (p *Pipeline) goldLevels() map[string]int {
	out := map[string]int{}
	for _, g := range p.Gold {
		if !p.IsDerived(g) {
			out[g.Name] = 1
		}
	}
	for _, g := range p.DerivedOrder() {
		up, _ := p.UpstreamGold(g)
		out[g.Name] = out[up.Name] + 1
	}
	return out
}

func goldDetail(g Gold) string {
	w := g.Window
	d := w.Type
	switch w.Type {
	case WindowSession:
		d += " gap " + w.Gap.String()
	case WindowSliding:
		d += " " + w.Size.String() + " every " + w.Slide.String()
	default:
		d += " " + w.Size.String()
	}
	if len(g.GroupBy) > 0 {
		d += " by " + strings.Join(g.GroupBy, ", ")
	}
	return d
}
