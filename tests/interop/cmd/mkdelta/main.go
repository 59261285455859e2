// Command mkdelta writes Delta tables with medallion's own writer (packages table, merge and
// txlog), so that the interop suite can hand them to Spark and delta-rs. It is a test tool, not
// part of the medallion CLI: rows come in as JSON lines in the canonical form of
// tests/interop/interop_rows.py, and each subcommand is one Delta operation (one commit).
//
//	mkdelta create     URL --schema JSON [--partition-by a,b] [--property k=v ...]
//	mkdelta append     URL [--each] < rows.jsonl     (--each: one commit per row)
//	mkdelta overwrite  URL [--where 'col op literal' ...] < rows.jsonl   (replaceWhere)
//	mkdelta merge      URL --key id [--set name,...] < source.jsonl
//	mkdelta optimize   URL
//	mkdelta vacuum     URL                            (no retention: every unreferenced file)
//	mkdelta checkpoint URL [--drop-commits]
//
// URL is anything objstore/bucketurl opens (file://, a path, s3:// with the AWS_* environment).
// A merge source carries an extra "op" column: matched rows with op "delete" are deleted, other
// matched rows get the --set columns from the source, unmatched rows are inserted.
//
// Crash safety is that of the packages it calls: every subcommand is one commit, so a killed
// mkdelta leaves the table at its previous version (plus unreferenced files).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/merge"
	"github.com/medallion-lake/medallion/objstore/bucketurl"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// errUsage reports a command line that mkdelta does not understand (exit status 2).
var errUsage = errors.New("mkdelta: usage")

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) < 2 {
		return fmt.Errorf("%w: mkdelta create|append|overwrite|merge|optimize|vacuum|checkpoint URL [flags]", errUsage)
	}
	cmd, url := args[0], args[1]
	fs := flag.NewFlagSet("mkdelta "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	schemaJSON := fs.String("schema", "", "create: Delta schema JSON")
	partitionBy := fs.String("partition-by", "", "create: comma-separated partition columns")
	var props, where multiFlag
	fs.Var(&props, "property", "create: table property k=v (repeatable)")
	fs.Var(&where, "where", "overwrite: 'col op literal' or 'col IS [NOT] NULL' (repeatable, ANDed)")
	each := fs.Bool("each", false, "append: one commit per row")
	key := fs.String("key", "", "merge: comma-separated join columns")
	set := fs.String("set", "", "merge: comma-separated columns a matched row takes from the source")
	dropCommits := fs.Bool("drop-commits", false, "checkpoint: delete the commits before it")
	if err := fs.Parse(args[2:]); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	bucket, err := bucketurl.Open(ctx, url, bucketurl.Options{})
	if err != nil {
		return fmt.Errorf("mkdelta: %w", err)
	}
	defer bucket.Close()
	t := table.Open(bucket, table.Options{Log: txlog.Options{EngineInfo: "medallion-mkdelta"}})
	switch cmd {
	case "create":
		return create(ctx, t, *schemaJSON, *partitionBy, props, stdout)
	case "append":
		return appendRows(ctx, t, stdin, *each, stdout)
	case "overwrite":
		return overwrite(ctx, t, stdin, where, stdout)
	case "merge":
		return mergeRows(ctx, t, stdin, *key, *set, stdout)
	case "optimize":
		res, err := t.Optimize(ctx, table.OptimizeOptions{})
		if err != nil {
			return fmt.Errorf("mkdelta: optimize %s: %w", url, err)
		}
		fmt.Fprintf(stdout, "version %d: %d files removed, %d added\n", res.Version, res.FilesRemoved, res.FilesAdded)
		return nil
	case "vacuum":
		// A zero retention means the default to Vacuum: 1ns removes every unreferenced file.
		res, err := t.Vacuum(ctx, table.VacuumOptions{Retention: time.Nanosecond, Force: true})
		if err != nil {
			return fmt.Errorf("mkdelta: vacuum %s: %w", url, err)
		}
		fmt.Fprintf(stdout, "vacuum deleted %d files\n", len(res.Files))
		return nil
	case "checkpoint":
		return checkpoint(ctx, t, *dropCommits, stdout)
	}
	return fmt.Errorf("%w: unknown subcommand %q", errUsage, cmd)
}

func create(ctx context.Context, t *table.Table, schemaJSON, partitionBy string, props []string, stdout io.Writer) error {
	if schemaJSON == "" {
		return fmt.Errorf("%w: create needs --schema", errUsage)
	}
	schema, err := txlog.ParseSchema(schemaJSON)
	if err != nil {
		return fmt.Errorf("mkdelta: --schema: %w", err)
	}
	var parts []string
	if partitionBy != "" {
		parts = strings.Split(partitionBy, ",")
	}
	pm := map[string]string{}
	for _, p := range props {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("%w: --property %q is not k=v", errUsage, p)
		}
		pm[k] = v
	}
	v, err := t.Create(ctx, schema, parts, pm)
	if err != nil {
		return fmt.Errorf("mkdelta: create: %w", err)
	}
	fmt.Fprintf(stdout, "version %d\n", v)
	return nil
}

// tableSchema is the latest schema of an existing table.
func tableSchema(ctx context.Context, t *table.Table) (*txlog.StructType, error) {
	snap, err := t.Log().Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("mkdelta: %w", err)
	}
	s, err := snap.Schema()
	if err != nil {
		return nil, fmt.Errorf("mkdelta: %w", err)
	}
	return s, nil
}

func appendRows(ctx context.Context, t *table.Table, stdin io.Reader, each bool, stdout io.Writer) error {
	schema, err := tableSchema(ctx, t)
	if err != nil {
		return err
	}
	b, err := readRows(stdin, "stdin", schema)
	if err != nil {
		return err
	}
	if !each {
		res, err := t.Append(ctx, []*pq.Batch{b}, table.AppendOptions{})
		if err != nil {
			return fmt.Errorf("mkdelta: append: %w", err)
		}
		fmt.Fprintf(stdout, "version %d\n", res.Version)
		return nil
	}
	for i := range b.Len() {
		one := b.Filter(rowMask(b.Len(), i))
		res, err := t.Append(ctx, []*pq.Batch{one}, table.AppendOptions{})
		if err != nil {
			return fmt.Errorf("mkdelta: append of row %d: %w", i+1, err)
		}
		fmt.Fprintf(stdout, "version %d\n", res.Version)
	}
	return nil
}

func rowMask(n, i int) []bool {
	keep := make([]bool, n)
	keep[i] = true
	return keep
}

func overwrite(ctx context.Context, t *table.Table, stdin io.Reader, where []string, stdout io.Writer) error {
	var pred sqlexpr.Expr
	if len(where) > 0 {
		var terms []sqlexpr.Expr
		for _, w := range where {
			e, err := parseWhere(w)
			if err != nil {
				return err
			}
			terms = append(terms, e)
		}
		pred = sqlexpr.And(terms...)
	}
	schema, err := tableSchema(ctx, t)
	if err != nil {
		return err
	}
	b, err := readRows(stdin, "stdin", schema)
	if err != nil {
		return err
	}
	res, err := t.Overwrite(ctx, pred, []*pq.Batch{b}, table.AppendOptions{})
	if err != nil {
		return fmt.Errorf("mkdelta: overwrite: %w", err)
	}
	fmt.Fprintf(stdout, "version %d\n", res.Version)
	return nil
}

// parseWhere reads one comparison "col op literal" (op one of = < <= > >=) or "col IS NULL" /
// "col IS NOT NULL". Literals are in the column's text form, as sqlexpr.Cmp takes them.
func parseWhere(s string) (sqlexpr.Expr, error) {
	f := strings.Fields(s)
	switch {
	case len(f) == 3 && strings.EqualFold(f[1], "is") && strings.EqualFold(f[2], "null"):
		return sqlexpr.IsNull(f[0]), nil
	case len(f) == 4 && strings.EqualFold(f[1], "is") && strings.EqualFold(f[2], "not") && strings.EqualFold(f[3], "null"):
		return sqlexpr.IsNotNull(f[0]), nil
	case len(f) == 3:
		ops := map[string]sqlexpr.CmpOp{"=": sqlexpr.OpEq, "<": sqlexpr.OpLt, "<=": sqlexpr.OpLe, ">": sqlexpr.OpGt, ">=": sqlexpr.OpGe}
		if op, ok := ops[f[1]]; ok {
			return sqlexpr.Cmp(f[0], op, strings.Trim(f[2], "'")), nil
		}
	}
	return nil, fmt.Errorf("%w: --where %q: want 'col op literal' (op = < <= > >=) or 'col IS [NOT] NULL'", errUsage, s)
}

func mergeRows(ctx context.Context, t *table.Table, stdin io.Reader, key, set string, stdout io.Writer) error {
	if key == "" {
		return fmt.Errorf("%w: merge needs --key", errUsage)
	}
	schema, err := tableSchema(ctx, t)
	if err != nil {
		return err
	}
	src := &txlog.StructType{Fields: append(append([]txlog.StructField{}, schema.Fields...),
		txlog.StructField{Name: "op", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true})}
	b, err := readRows(stdin, "stdin", src)
	if err != nil {
		return err
	}
	updates := map[string]merge.Value{}
	if set != "" {
		for _, c := range strings.Split(set, ",") {
			updates[c] = merge.FromSource(c)
		}
	}
	inserts := map[string]merge.Value{}
	for _, f := range schema.Fields {
		inserts[f.Name] = merge.FromSource(f.Name)
	}
	res, err := merge.Run(ctx, t, merge.Spec{
		Source: []*pq.Batch{b},
		Keys:   strings.Split(key, ","),
		Matched: []merge.Matched{
			{Desc: "s.op = 'delete'", Cond: func(_, s merge.Row) bool { return s.Get("op") == "delete" }, Delete: true},
			{Set: updates},
		},
		NotMatched: []merge.NotMatched{{Values: inserts}},
	})
	if err != nil {
		return fmt.Errorf("mkdelta: merge: %w", err)
	}
	fmt.Fprintf(stdout, "version %d: %d inserted, %d updated, %d deleted\n", res.Version, res.Inserted, res.Updated, res.Deleted)
	return nil
}

func checkpoint(ctx context.Context, t *table.Table, dropCommits bool, stdout io.Writer) error {
	snap, err := t.Log().Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("mkdelta: %w", err)
	}
	if err := t.Log().Checkpoint(ctx, snap); err != nil {
		return fmt.Errorf("mkdelta: checkpoint: %w", err)
	}
	if dropCommits {
		// As log cleanup would after the retention: readers must rebuild from the checkpoint.
		for v := range snap.Version() {
			if err := t.Bucket().Delete(ctx, txlog.CommitKey(v)); err != nil {
				return fmt.Errorf("mkdelta: deleting commit %d: %w", v, err)
			}
		}
	}
	fmt.Fprintf(stdout, "checkpoint at version %d\n", snap.Version())
	return nil
}
