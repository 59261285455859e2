// Command pqread reads one Parquet data file through every read path of package table and
// dumps what each path returns as raw column files, so that the interop suite
// (tests/interop/test_reader_differential.py) can compare every path, exactly, with pyarrow's
// read of the same file. It is a test tool, not part of the medallion CLI.
//
//	pqread FILE --schema DELTA_SCHEMA_JSON --out DIR [--columns a,b] [--where EXPR] [--paths p,q]
//	       [--readwith-passes N]
//	pqread gen --seed S --rows N --file OUT --dump DIR     (see gen.go)
//
// # Read paths
//
// Each path's result goes to DIR/<path>/ (a path that is not asked for, or lacks its flag, is
// not written):
//
//	decode          pq.DecodeFile over the whole file (one batch per row group)
//	read            FileScan.Read, every column, the file as the single add of a table whose
//	                root is the file's folder (objstore/file, txlog.Add{Path, Size})
//	project         FileScan.Read with Columns = --columns (a reordered subset, say)
//	filter          FileScan.Read with Filter = --where, every column
//	project_filter  Columns and Filter together (the filter may read columns outside the
//	                projection: the wider read that is then narrowed)
//	readwith        FileScan.ReadWith with one *pq.ReadBuffer shared by every row group of
//	                --readwith-passes full scans of the file (default 1); each batch is copied
//	                out before the next is asked for (the buffer is reused), every later scan
//	                must equal the first, and the last is dumped
//
// Every batch a path yields must pass Batch.Validate and carry the schema the path asked for.
// PQREAD_CPUPROFILE=file writes a CPU profile of the run.
//
// # Dump format
//
// DIR/<path>/manifest.json describes the dump:
//
//	{"path": "read", "rows": N, "batches": [rows of each batch, in order],
//	 "columns": [COLUMN, ...]}
//	COLUMN = {"name": field name, "type": Delta type (as in the schema JSON), "kind": ...,
//	          "rows": rows of this column, "prefix": file prefix, "children": [COLUMN, ...]}
//
// The batches of a path are concatenated in order. For a column with prefix P (files in
// DIR/<path>/), all little-endian:
//
//	P.valid    one byte per row: 1 present, 0 null (always written)
//	P.values   fixed-width values, one per row (a null row holds whatever the reader left there):
//	             kind int64   long, timestamp, timestamp_ntz: int64 (timestamps in microseconds
//	                          since the epoch, UTC for both)
//	             kind int32   integer, short, byte, date: int32 (dates in days since the epoch)
//	             kind float64 double: IEEE 754 binary64 bits; kind float32 float: binary32 bits
//	             kind bool    boolean: one byte, 0 or 1
//	             kind decimal decimal(p,s): the unscaled value as a 128-bit two's complement
//	                          integer, low 64 bits then high 64 bits (Arrow's decimal128 layout)
//	P.offsets  kinds bytes, list, map: int32, rows+1 entries, starting at 0
//	P.data     kind bytes (string, binary): the bytes that P.offsets delimit
//
// Nested columns (kinds struct, list, map) have children with prefixes P.0, P.1, ...: a struct's
// fields (each with the struct's row count), a list's elements (P.0, offsets[rows] rows), a
// map's keys (P.0) and values (P.1). This is Arrow's layout except for validity, which is a
// byte per row instead of a bitmap, so pyarrow loads every column with Array.from_buffers.
//
// # --where
//
// EXPR is a boolean expression over the table schema, built into a sqlexpr.Expr and bound with
// sqlexpr.Bind (see parseWhere): comparisons `col op literal` (op: = < <= > >= !=), `col IS [NOT]
// NULL`, `col IN (lit, ...)`, combined with AND, OR, NOT and parentheses. A literal is a bare
// word or a single-quoted string (a quote inside is doubled); it reaches sqlexpr.Cmp as text, which
// reads it in the column's partition-value form (numbers, true/false, yyyy-mm-dd, timestamps
// as yyyy-mm-ddThh:mm:ss.ffffffZ, decimals as plain digits), or as the bytes of a string or
// binary column. A row passes when the expression is TRUE (SQL three-valued logic).
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// errUsage reports a command line that pqread does not understand (exit status 2).
var errUsage = errors.New("pqread: usage")

// allPaths are the read paths, in the order they run.
var allPaths = []string{"decode", "read", "project", "filter", "project_filter", "readwith"}

func main() {
	if prof := os.Getenv("PQREAD_CPUPROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	err := run(context.Background(), os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		pprof.StopCPUProfile()
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return errors.New("pqread: dumps are written in the machine's byte order, which must be little-endian")
	}
	if len(args) > 0 && args[0] == "gen" {
		return gen(ctx, args[1:], stdout)
	}
	if len(args) < 1 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("%w: pqread FILE --schema JSON --out DIR [--columns a,b] [--where EXPR] [--paths p,q] | pqread gen [flags]", errUsage)
	}
	path := args[0]
	fs := flag.NewFlagSet("pqread", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	schemaJSON := fs.String("schema", "", "Delta schema JSON of the table")
	out := fs.String("out", "", "dump directory")
	columns := fs.String("columns", "", "projection: comma-separated columns")
	where := fs.String("where", "", "row filter expression")
	paths := fs.String("paths", strings.Join(allPaths, ","), "read paths to run")
	passes := fs.Int("readwith-passes", 1, "readwith: full scans through the one ReadBuffer")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if *schemaJSON == "" || *out == "" {
		return fmt.Errorf("%w: --schema and --out are required", errUsage)
	}
	schema, err := txlog.ParseSchema(*schemaJSON)
	if err != nil {
		return fmt.Errorf("pqread: --schema: %w", err)
	}
	if *passes < 1 {
		return fmt.Errorf("%w: --readwith-passes must be at least 1", errUsage)
	}
	r := &reader{path: path, schema: schema, out: *out, passes: *passes}
	if *columns != "" {
		r.columns = strings.Split(*columns, ",")
	}
	if *where != "" {
		e, err := parseWhere(*where)
		if err != nil {
			return err
		}
		if r.filter, err = sqlexpr.Bind(e, schema, nil); err != nil {
			return fmt.Errorf("pqread: --where %q: %w", *where, err)
		}
	}
	want := map[string]bool{}
	for _, p := range strings.Split(*paths, ",") {
		if !contains(allPaths, p) {
			return fmt.Errorf("%w: unknown read path %q (want some of %s)", errUsage, p, strings.Join(allPaths, ","))
		}
		want[p] = true
	}
	// A failing path does not stop the others: each is reported on stdout, as
	// {"path": {"rows": N, "seconds": S}} or {"path": {"error": "..."}}, and any failure makes
	// the exit status 1.
	report := map[string]any{}
	var failed []string
	for _, p := range allPaths {
		if !want[p] {
			continue
		}
		start := time.Now()
		rows, err := r.runPath(ctx, p)
		if errors.Is(err, errSkipped) {
			continue
		}
		if err != nil {
			report[p] = map[string]any{"error": err.Error()}
			failed = append(failed, fmt.Sprintf("path %s: %v", p, err))
			continue
		}
		report[p] = map[string]any{"rows": rows, "seconds": time.Since(start).Seconds()}
	}
	if err := json.NewEncoder(stdout).Encode(report); err != nil {
		return err
	}
	if failed != nil {
		return fmt.Errorf("pqread: %s: %s", path, strings.Join(failed, "; "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// errSkipped: the path needs a flag that was not given.
var errSkipped = errors.New("skipped")

type reader struct {
	path    string
	schema  *txlog.StructType
	out     string
	columns []string
	filter  *sqlexpr.Predicate
	passes  int
}

// scan returns a FileScan of the file's folder and the file as its single add.
func (r *reader) scan() (*table.FileScan, []*txlog.Add, error) {
	abs, err := filepath.Abs(r.path)
	if err != nil {
		return nil, nil, err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, nil, err
	}
	bucket, err := file.New(filepath.Dir(abs))
	if err != nil {
		return nil, nil, err
	}
	add := &txlog.Add{Path: filepath.Base(abs), Size: info.Size(), DataChange: true}
	return &table.FileScan{Bucket: bucket, Schema: r.schema}, []*txlog.Add{add}, nil
}

// runPath runs one read path and dumps its result; it returns the rows read.
func (r *reader) runPath(ctx context.Context, p string) (int, error) {
	outSchema := r.schema
	if (p == "project" || p == "project_filter") && r.columns == nil {
		return 0, errSkipped
	}
	if (p == "filter" || p == "project_filter") && r.filter == nil {
		return 0, errSkipped
	}
	if p == "project" || p == "project_filter" {
		outSchema = &txlog.StructType{}
		for _, c := range r.columns {
			f := r.schema.Field(c)
			if f == nil {
				return 0, fmt.Errorf("--columns: no column %s", c)
			}
			outSchema.Fields = append(outSchema.Fields, *f)
		}
	}
	d, err := newDump(p, outSchema)
	if err != nil {
		return 0, err
	}
	add := func(b *pq.Batch) error {
		if err := checkBatch(b, outSchema); err != nil {
			return fmt.Errorf("batch %d: %w", len(d.batches), err)
		}
		return d.add(b)
	}
	if p == "decode" {
		f, err := os.Open(r.path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return 0, err
		}
		batches, err := pq.DecodeFile(f, info.Size(), r.schema)
		if err != nil {
			return 0, err
		}
		for _, b := range batches {
			if err := add(b); err != nil {
				return 0, err
			}
		}
		return d.n, d.write(filepath.Join(r.out, p))
	}
	scan, files, err := r.scan()
	if err != nil {
		return 0, err
	}
	switch p {
	case "project":
		scan.Columns = r.columns
	case "filter":
		scan.Filter = r.filter
	case "project_filter":
		scan.Columns, scan.Filter = r.columns, r.filter
	}
	if p != "readwith" {
		for b, err := range scan.Read(ctx, files) {
			if err != nil {
				return 0, err
			}
			if err := add(b); err != nil {
				return 0, err
			}
		}
		return d.n, d.write(filepath.Join(r.out, p))
	}
	// readwith: full scans through one buffer; each batch must be copied out (d.add copies)
	// before the next is decoded into the same memory. Later scans must equal the first.
	buf := &pq.ReadBuffer{}
	var first *dump
	for pass := range r.passes {
		if pass == 1 {
			first = d
		}
		if pass >= 1 {
			if d, err = newDump(p, outSchema); err != nil {
				return 0, err
			}
		}
		for b, err := range scan.ReadWith(ctx, files, buf) {
			if err != nil {
				return 0, fmt.Errorf("pass %d: %w", pass+1, err)
			}
			if err := add(b); err != nil {
				return 0, fmt.Errorf("pass %d: %w", pass+1, err)
			}
		}
	}
	if first != nil {
		if err := first.sameAs(d); err != nil {
			return 0, fmt.Errorf("the last scan through the shared ReadBuffer differs from the first: %w", err)
		}
	}
	return d.n, d.write(filepath.Join(r.out, p))
}

// checkBatch checks what every yielded batch must satisfy: the schema asked for, valid columns.
func checkBatch(b *pq.Batch, schema *txlog.StructType) error {
	if b == nil {
		return errors.New("nil batch")
	}
	if len(b.Schema.Fields) != len(schema.Fields) || len(b.Columns) != len(schema.Fields) {
		return fmt.Errorf("%d fields and %d columns, want %d", len(b.Schema.Fields), len(b.Columns), len(schema.Fields))
	}
	for i := range schema.Fields {
		if b.Schema.Fields[i].Name != schema.Fields[i].Name {
			return fmt.Errorf("field %d is %s, want %s", i, b.Schema.Fields[i].Name, schema.Fields[i].Name)
		}
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("invalid: %w", err)
	}
	return nil
}
