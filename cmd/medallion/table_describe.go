package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/medallion-lake/medallion/table"

	"github.com/medallion-lake/medallion/txlog"
)

// tableDescription is the JSON form of describe.
type tableDescription struct {
	Version          int64             `json:"version"`
	Timestamp        time.Time         `json:"timestamp"`
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Protocol         txlog.Protocol    `json:"protocol"`
	Schema           json.RawMessage   `json:"schema"`
	PartitionColumns []string          `json:"partitionColumns"`
	NumFiles         int               `json:"numFiles"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	Properties       map[string]string `json:"properties"`
	CheckpointAt     *int64            `json:"checkpointVersion,omitempty"`
}

func newTableDescribeCmd() *cobra.Command {
	var vf tableVersionFlags
	var format string
	cmd := tableSubCmd{
		use:      "describe URL",
		short:    "Show version, protocol, schema, partitioning, files and properties",
		readOnly: true,
		check:    func() error { return checkFormat(format, "text", "json") },
		run: func(cmd *cobra.Command, t *table.Table, _ string) error {
			snap, err := vf.snapshot(cmd.Context(), t.Log())
			if err != nil {
				return err
			}
			schema, err := snap.Schema()
			if err != nil {
				return err
			}
			m := snap.Metadata()
			d := tableDescription{
				Version: snap.Version(), Timestamp: snap.Timestamp(), ID: m.ID, Name: m.Name, Description: m.Description,
				Protocol: snap.Protocol(), Schema: json.RawMessage(m.SchemaString), PartitionColumns: snap.PartitionColumns(),
				NumFiles: len(snap.Files()), SizeInBytes: snap.TotalSize(), Properties: m.Configuration,
			}
			if cp := snap.CheckpointVersion(); cp >= 0 {
				d.CheckpointAt = &cp
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			return printDescription(out, d, schema)
		},
	}.command()
	vf.register(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func printDescription(w io.Writer, d tableDescription, schema *txlog.StructType) error {
	p := d.Protocol
	fmt.Fprintf(w, "version:           %d\n", d.Version)
	fmt.Fprintf(w, "timestamp:         %s\n", d.Timestamp.Format(time.RFC3339Nano))
	fmt.Fprintf(w, "id:                %s\n", d.ID)
	if d.Name != "" {
		fmt.Fprintf(w, "name:              %s\n", d.Name)
	}
	fmt.Fprintf(w, "protocol:          reader %d, writer %d\n", p.MinReaderVersion, p.MinWriterVersion)
	if len(p.ReaderFeatures) > 0 {
		fmt.Fprintf(w, "reader features:   %s\n", strings.Join(p.ReaderFeatures, ", "))
	}
	if len(p.WriterFeatures) > 0 {
		fmt.Fprintf(w, "writer features:   %s\n", strings.Join(p.WriterFeatures, ", "))
	}
	fmt.Fprintf(w, "partition columns: %s\n", strings.Join(d.PartitionColumns, ", "))
	fmt.Fprintf(w, "files:             %d\n", d.NumFiles)
	fmt.Fprintf(w, "size:              %d bytes\n", d.SizeInBytes)
	fmt.Fprintln(w, "schema:")
	printFields(w, schema.Fields, "  ")
	fmt.Fprintln(w, "properties:")
	for _, k := range slices.Sorted(maps.Keys(d.Properties)) {
		fmt.Fprintf(w, "  %s = %s\n", k, d.Properties[k])
	}
	return nil
}

func printFields(w io.Writer, fields []txlog.StructField, indent string) {
	for _, f := range fields {
		null := ""
		if !f.Nullable {
			null = " not null"
		}
		fmt.Fprintf(w, "%s%s: %s%s\n", indent, f.Name, typeString(f.Type), null)
		if st, ok := f.Type.(*txlog.StructType); ok {
			printFields(w, st.Fields, indent+"  ")
		}
	}
}

// typeString renders a type the way Spark's simpleString does (array<long>, map<string,int>).
func typeString(t txlog.DataType) string {
	switch v := t.(type) {
	case txlog.ArrayType:
		return "array<" + typeString(v.ElementType) + ">"
	case txlog.MapType:
		return "map<" + typeString(v.KeyType) + "," + typeString(v.ValueType) + ">"
	default:
		return t.TypeName()
	}
}
