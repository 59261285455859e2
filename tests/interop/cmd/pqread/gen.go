package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// gen writes one random data file with medallion's own writer and dumps the batch it wrote:
//
//	pqread gen --seed S --rows N --file OUT --dump DIR [--nested]
//
// The schema, the rows (with a null layout and a cardinality per column) and the write
// options (row group size, page buffer size, codec) are drawn by package pq/pqtest from
// S alone, so a seed reproduces the file. The file is pq.EncodeFile's, written to OUT. DIR
// gets generated/ (the batch, in the dump format of the package comment), schema.json (the
// Delta schema) and gen.json (the seed, the write options and each column's shape).
func gen(_ context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pqread gen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	seed := fs.Uint64("seed", 0, "random seed")
	rows := fs.Int("rows", 0, "rows to write")
	out := fs.String("file", "", "Parquet file to write")
	dumpDir := fs.String("dump", "", "directory for the generated rows")
	nested := fs.Bool("nested", false, "add struct, list and map columns")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() != 0 || *out == "" || *dumpDir == "" || *rows <= 0 {
		return fmt.Errorf("%w: pqread gen --seed S --rows N --file OUT --dump DIR [--nested]", errUsage)
	}
	r := rand.New(rand.NewPCG(*seed, 0x6d6564616c6c696f)) // "medallio"
	schema := pqtest.RandomSchema(r, *nested)
	batch, shapes, err := pqtest.RandomBatch(r, schema, *rows)
	if err != nil {
		return fmt.Errorf("pqread gen: %w", err)
	}
	opts := pqtest.RandomWriteOptions(r, *rows)
	data, _, err := pq.EncodeFile(schema, []*pq.Batch{batch}, opts)
	if err != nil {
		return fmt.Errorf("pqread gen: encode: %w", err)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return err
	}
	d, err := newDump("generated", schema)
	if err != nil {
		return err
	}
	if err := d.add(batch); err != nil {
		return fmt.Errorf("pqread gen: dump: %w", err)
	}
	if err := d.write(filepath.Join(*dumpDir, "generated")); err != nil {
		return err
	}
	schemaJSON, err := txlog.MarshalSchema(schema)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dumpDir, "schema.json"), []byte(schemaJSON), 0o644); err != nil {
		return err
	}
	shapeText := map[string]string{}
	for i, f := range schema.Fields {
		shapeText[f.Name] = shapes[i].String()
	}
	info, err := json.MarshalIndent(map[string]any{
		"seed": *seed, "rows": *rows, "bytes": len(data), "options": fmt.Sprintf("%+v", opts), "shapes": shapeText,
	}, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dumpDir, "gen.json"), info, 0o644); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", info)
	return err
}
