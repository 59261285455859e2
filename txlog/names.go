package txlog

import (
	"fmt"
	"strconv"
	"strings"
)

// LogDir is the folder of the transaction log inside a table.
const LogDir = "_delta_log/"

const (
	lastCheckpointKey = LogDir + "_last_checkpoint"
	sidecarDir        = LogDir + "_sidecars/"
)

// CommitKey is the object key of the commit file of version v.
func CommitKey(v int64) string { return fmt.Sprintf("%s%020d.json", LogDir, v) }

// CheckpointKey is the object key of the classic single-file checkpoint of version v.
func CheckpointKey(v int64) string { return fmt.Sprintf("%s%020d.checkpoint.parquet", LogDir, v) }

type logFileKind int

const (
	kindUnknown logFileKind = iota
	kindCommit
	kindCheckpointClassic
	kindCheckpointPart
	kindCheckpointV2
	kindCRC
	kindCompacted
)

// logFile is one file of _delta_log/ classified by name.
type logFile struct {
	key     string
	kind    logFileKind
	version int64
	part    int    // multi-part: 1-based part number
	parts   int    // multi-part: total parts
	format  string // "json" or "parquet" for v2 checkpoints
	size    int64
	modMs   int64
}

// parseLogName classifies a key directly under _delta_log/. Anything it does not recognise
// (including files in subfolders such as .tmp/ or _staged_commits/) is kindUnknown.
func parseLogName(key string) logFile {
	lf := logFile{key: key}
	name, ok := strings.CutPrefix(key, LogDir)
	if !ok || strings.Contains(name, "/") || len(name) < 21 || name[20] != '.' {
		return lf
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || v < 0 {
		return lf
	}
	lf.version = v
	rest := name[21:]
	switch {
	case rest == "json":
		lf.kind = kindCommit
	case rest == "crc":
		lf.kind = kindCRC
	case rest == "checkpoint.parquet":
		lf.kind = kindCheckpointClassic
	case strings.HasPrefix(rest, "checkpoint."):
		fields := strings.Split(strings.TrimPrefix(rest, "checkpoint."), ".")
		if len(fields) == 3 && fields[2] == "parquet" && len(fields[0]) == 10 && len(fields[1]) == 10 {
			p, err1 := strconv.Atoi(fields[0])
			n, err2 := strconv.Atoi(fields[1])
			if err1 == nil && err2 == nil && p >= 1 && p <= n {
				lf.kind, lf.part, lf.parts = kindCheckpointPart, p, n
			}
		} else if len(fields) == 2 && (fields[1] == "json" || fields[1] == "parquet") && len(fields[0]) == 36 {
			lf.kind, lf.format = kindCheckpointV2, fields[1]
		}
	case strings.HasSuffix(rest, ".compacted.json"):
		lf.kind = kindCompacted
	}
	return lf
}
