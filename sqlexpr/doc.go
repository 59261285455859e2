// Package sqlexpr owns the boolean and scalar expressions of Spark SQL that the pipeline
// evaluates itself: the predicate builders (Eq, Lt, In, IsNull, And, Or, Not, ...) and the
// parser of Spark SQL text (ParseSQL: bounded size, token count and depth, MaxSQLBytes,
// MaxSQLTokens, MaxSQLDepth), the type check against a schema (Bind, CompileSQL: Spark's
// implicit casts, decimal precision rules, null semantics), and evaluation over pq batches
// (Predicate.Eval, Program.Eval) and over what is known of a data file (Predicate.MayMatch,
// AllMatch and MayMatchPartition: partition pruning and min/max data skipping from Delta
// statistics). It also owns the library of Spark's scalar functions (strings, numbers, dates
// and timestamps, get_json_object, fields of from_json, CASE and CAST; docs/expressions.md lists them) and values of
// any type (CompileSQLValue, Program.EvalColumn) for computed columns. Users: data-quality
// expectations (silver), replaceWhere predicates, Delta CHECK constraints and generated columns
// (table's row rules), join and filter conditions, transforms.
//
// It evaluates over package pq's columnar batches and imports nothing of the pipeline above
// pq; package table builds on it.
//
// Crash guarantees: none needed; it holds no state and does no I/O. A compiled Program is
// not safe for concurrent use (each writer compiles its own).
//
// Its errors keep the "table:" prefix they had when this code lived in package table, so that
// error texts users and tests match on stay the same.
package sqlexpr
