package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/report"
)

func newGraphCmd() *cobra.Command {
	cmd := newConfigCmd("graph --config F [--format text|dot] [--status]",
		"Print the pipeline's tables and flows (sources, silvers, joins, golds, derived tables)",
		`graph prints the tables the config declares and how rows flow between them: each source's
landing, bronze and silver, the joins, the gold aggregations over sources and joins, and the
tables derived from other golds (docs/derived-tables.md), with each gold's level. --format dot
prints Graphviz DOT (medallion graph --config F --format dot | dot -Tsvg > graph.svg). It reads
the config only, unless --status: then it also reads the lake (never writes it) and prints one
line a node with its table's version, its freshness (the upstream versions its query has not
read yet, and the watermark its windows are complete to) and a gold's late rows pending, as the
status page draws them.`,
		"override a config key, e.g. --set gold[1].source=events_5m (repeatable)",
		func(cmd *cobra.Command, path string) error {
			format, _ := cmd.Flags().GetString("format")
			if format != "text" && format != "dot" {
				return usageError("graph: --format %q: expected text or dot", format)
			}
			cfg, err := loadCommandConfig(cmd, path)
			if err != nil {
				return err
			}
			if status, _ := cmd.Flags().GetBool("status"); status {
				if format != "text" {
					return usageError("graph: --status prints text only")
				}
				return writeGraphStatus(cmd, cfg, path)
			}
			g := cfg.Graph()
			if format == "dot" {
				return writeGraphDOT(cmd.OutOrStdout(), g)
			}
			return writeGraphText(cmd.OutOrStdout(), g)
		})
	cmd.Flags().String("format", "text", "output format: text or dot")
	cmd.Flags().Bool("status", false, "read the lake too: each table's version, freshness and late rows pending, one line a node")
	return cmd
}

// writeGraphStatus is graph --status: the status page's graph as text (report.GraphStatus).
func writeGraphStatus(cmd *cobra.Command, cfg *config.Pipeline, path string) error {
	if err := refuseEmptyLake(cmd.Context(), cfg, path); err != nil {
		return err
	}
	lake, err := jobs.OpenLakeReadOnly(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	defer lake.Close()
	g, err := report.PipelineGraph(cmd.Context(), lake, cfg)
	if err != nil {
		return err
	}
	return g.WriteText(cmd.OutOrStdout())
}

// writeGraphText prints the graph as sections of lines "name: what <- inputs -> path".
func writeGraphText(w io.Writer, g config.Graph) error {
	byID := map[string]config.GraphNode{}
	inputs := map[string][]string{}
	for _, n := range g.Nodes {
		byID[n.ID] = n
	}
	for _, e := range g.Edges {
		inputs[e.To] = append(inputs[e.To], byID[e.From].Kind+" "+byID[e.From].Name)
	}
	var b strings.Builder
	section := func(title string, kinds ...string) {
		first := true
		for _, n := range g.Nodes {
			if !hasKind(kinds, n.Kind) {
				continue
			}
			if first {
				fmt.Fprintf(&b, "%s\n", title)
				first = false
			}
			line := "  " + n.Name
			if n.Kind == config.NodeSilver {
				src := byID[config.NodeLanding+":"+n.Name]
				brz := byID[config.NodeBronze+":"+n.Name]
				fmt.Fprintf(&b, "%s: %s -> %s -> %s\n", line, src.Path, brz.Path, n.Path)
				continue
			}
			if n.Level > 0 {
				line += fmt.Sprintf(" (level %d)", n.Level)
			}
			if n.Detail != "" {
				line += ": " + n.Detail
			}
			fmt.Fprintf(&b, "%s <- %s -> %s\n", line, strings.Join(inputs[n.ID], " + "), n.Path)
		}
	}
	section("sources", config.NodeSilver)
	section("joins", config.NodeJoin)
	section("gold", config.NodeGold)
	section("derived", config.NodeDerived)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeGraphDOT prints the graph in Graphviz DOT, left to right, one shape per kind.
func writeGraphDOT(w io.Writer, g config.Graph) error {
	shape := map[string]string{config.NodeLanding: "folder", config.NodeBronze: "cylinder", config.NodeSilver: "cylinder",
		config.NodeJoin: "hexagon", config.NodeGold: "box", config.NodeDerived: "box"}
	var b strings.Builder
	b.WriteString("digraph medallion {\n  rankdir=LR;\n  node [fontname=\"sans-serif\"];\n")
	for _, n := range g.Nodes {
		label := n.Kind + " " + n.Name + `\n` + n.Path
		if n.Detail != "" {
			label += `\n` + n.Detail
		}
		style := ""
		if n.Kind == config.NodeDerived {
			style = ", style=rounded"
		}
		fmt.Fprintf(&b, "  %s [shape=%s, label=%s%s];\n", dotQuote(n.ID), shape[n.Kind], dotQuote(label), style)
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, "  %s -> %s;\n", dotQuote(e.From), dotQuote(e.To))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotQuote quotes s as a DOT ID; `\n` sequences already in s stay line breaks.
func dotQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

func hasKind(kinds []string, k string) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}
