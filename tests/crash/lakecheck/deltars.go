package lakecheck

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// DeltaRSPython finds a Python with delta-rs (`deltalake`): MEDALLION_DELTARS_PYTHON, or the
// interop suite's cached virtualenv (scripts/interop.sh setup). Empty when there is none.
func DeltaRSPython() string {
	if p := os.Getenv("MEDALLION_DELTARS_PYTHON"); p != "" {
		return p
	}
	cache := os.Getenv("MEDALLION_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache", "medallion")
	}
	matches, _ := filepath.Glob(filepath.Join(cache, "interop-venv-*", "bin", "python"))
	sort.Strings(matches)
	for i := len(matches) - 1; i >= 0; i-- {
		if exec.Command(matches[i], "-c", "import deltalake").Run() == nil {
			return matches[i]
		}
	}
	return ""
}

// deltaRSScript loads every version of each table given as an argument with delta-rs and
// prints, per table, the number of versions loaded and the row count of the latest. It leaves
// with os._exit once the answer is out: with deltalake 1.6.6 and pyarrow 26.0.1 the interpreter's
// teardown aborts about every other run ("terminate called without an active exception", exit
// 134) after a to_pyarrow_table, on any table, ours or not; the answer is complete by then.
const deltaRSScript = `
import json, os, sys
from deltalake import DeltaTable
out = {}
for path in sys.argv[1:]:
    latest = DeltaTable(path)
    v = latest.version()
    for i in range(v + 1):
        DeltaTable(path, version=i)
    out[path] = {"versions": v + 1, "rows": latest.to_pyarrow_table().num_rows}
print(json.dumps(out), flush=True)
os._exit(0)
`

// DeltaRSCounts has delta-rs replay every version of each table (file lake paths) and count
// the rows of the latest; it returns rows by path.
func DeltaRSCounts(python string, paths []string) (map[string]int, error) {
	out, err := exec.Command(python, append([]string{"-c", deltaRSScript}, paths...)...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("lakecheck: delta-rs: %w\n%s", err, out)
	}
	var res map[string]struct{ Versions, Rows int }
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("lakecheck: delta-rs output %q: %w", out, err)
	}
	rows := map[string]int{}
	for p, r := range res {
		rows[p] = r.Rows
	}
	return rows, nil
}
