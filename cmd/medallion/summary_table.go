package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// Summary formats of the run commands (--format).
const (
	formatAuto  = "auto"  // table on a terminal, JSON otherwise (pipes, files, schedulers)
	formatTable = "table" // a small aligned table of the summary's figures, for people
	formatJSON  = "json"  // the one-line JSON summary, for scripts and schedulers
)

// addFormatFlag registers --format on a command that prints a run summary.
func addFormatFlag(cmd *cobra.Command) {
	cmd.Flags().String("format", formatAuto, "summary format: table | json | auto (table on a terminal, JSON when piped)")
}

// summaryFormat is the command's --format resolved against its stdout: auto is a table on a
// terminal and JSON otherwise, so scripts that pipe the output always get JSON.
func summaryFormat(cmd *cobra.Command) (string, error) {
	f := formatJSON
	if cmd.Flags().Lookup("format") != nil {
		f, _ = cmd.Flags().GetString("format")
	}
	switch f {
	case formatJSON, formatTable:
		return f, nil
	case formatAuto:
		if isTerminal(cmd.OutOrStdout()) {
			return formatTable, nil
		}
		return formatJSON, nil
	}
	return "", usageError("%s: --format %q: expected table, json or auto", subPath(cmd), f)
}

// writeSummaryTable prints a JSON summary line as an aligned table: one row per figure, nested
// objects as dotted paths, list items by their name (or source, or index), in the JSON's order.
func writeSummaryTable(w io.Writer, line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return fmt.Errorf("summary table: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var rows [][2]string
	// The run's own fields first (job, ok, error, seconds), then the job's result without a
	// "result." in front of every figure.
	top, _ := v.(orderedObject)
	var result any
	for _, kv := range top {
		if kv.key == "result" {
			result = kv.val
			continue
		}
		flattenOrdered(kv.key, kv.val, &rows)
	}
	if result != nil {
		flattenOrdered("", result, &rows)
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// orderedObject is a JSON object with its keys in the order they came.
type orderedObject []struct {
	key string
	val any
}

func (o orderedObject) get(key string) (any, bool) {
	for _, kv := range o {
		if kv.key == key {
			return kv.val, true
		}
	}
	return nil, false
}

// decodeOrdered reads one JSON value, objects as orderedObject, arrays as []any.
func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		var o orderedObject
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, struct {
				key string
				val any
			}{k.(string), v})
		}
		_, err := dec.Token() // }
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ]
		return a, err
	}
	return tok, nil
}

// flattenOrdered appends (path, value) rows for every leaf under v.
func flattenOrdered(path string, v any, rows *[][2]string) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case orderedObject:
		if len(x) == 0 {
			*rows = append(*rows, [2]string{path, "{}"})
		}
		for _, kv := range x {
			flattenOrdered(join(kv.key), kv.val, rows)
		}
	case []any:
		if len(x) == 0 {
			*rows = append(*rows, [2]string{path, "[]"})
		}
		for i, item := range x {
			label := strconv.Itoa(i)
			if o, ok := item.(orderedObject); ok {
				for _, k := range []string{"name", "source", "table", "path"} {
					if s, ok := o.get(k); ok {
						if s, ok := s.(string); ok && s != "" {
							label = s
							break
						}
					}
				}
			}
			flattenOrdered(join(label), item, rows)
		}
	case nil:
		*rows = append(*rows, [2]string{path, "null"})
	case string:
		*rows = append(*rows, [2]string{path, strings.ReplaceAll(x, "\n", " ")})
	default:
		*rows = append(*rows, [2]string{path, fmt.Sprint(x)})
	}
}
