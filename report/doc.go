// Package report owns the read-only views of a pipeline: the lag analysis behind
// `medallion lag` (ingest time minus event time over bronze, percentiles, histogram, the
// fraction of rows each candidate watermark would have made late, the recommended watermark,
// late rows per day from the quarantine tables), the status of every pipeline table, the
// stream's progress history, and their rendering as text, JSON, server-side SVG charts and one
// self-contained HTML file.
//
// Everything here only reads the lake (Delta logs, Parquet files, progress JSON). It writes
// nothing to storage, so a crash at any instant leaves the lake as it was; a rerun reads the
// tables' latest committed versions. Output files are written by the caller.
//
// Rendering is deterministic: the same figures give byte-identical text, JSON, SVG and HTML
// (the report's generation time is an input, never read from a clock here).
package report
