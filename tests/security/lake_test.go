package security

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

const outsideMarker = "h10-OUTSIDE-THE-LAKE"

// outside creates a directory next to the lake holding a readable landing-like object whose
// every line carries outsideMarker: if any of it reaches a table, the lake escaped its root.
func outside(t *testing.T, dir string) string {
	t.Helper()
	o := filepath.Join(dir, "outside")
	if err := os.MkdirAll(o, 0o755); err != nil {
		t.Fatal(err)
	}
	line := `{"event_id":"` + outsideMarker + `","event_type":"x","amount":1,"event_time":"2026-01-10T12:00:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(o, "secret.json"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return o
}

func tableText(t *testing.T, lake, table string) string {
	t.Helper()
	b, err := file.New(filepath.Join(lake, table))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := lakecheck.Rows(context.Background(), b)
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return strings.Join(rows, "\n")
}

func listTree(t *testing.T, root string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	_ = filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			seen[p] = true
		}
		return nil
	})
	return seen
}

// TestFileLakeCannotEscapeRoot puts symlinks to outside data into the landing prefix and points
// table and landing paths outside the lake with "..": nothing outside may be read or written.
func TestFileLakeCannotEscapeRoot(t *testing.T) {
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	out := outside(t, dir)
	lake := filepath.Join(dir, "lake")
	landing := filepath.Join(lake, "landing/events")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	good := `{"event_id":"inside-1","event_type":"x","amount":1,"event_time":"2026-01-10T12:00:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(landing, "a.json"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "secret.json"), filepath.Join(landing, "b-link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(landing, "c-dirlink")); err != nil {
		t.Fatal(err)
	}
	cfg := lakecheck.WriteConfig(t, dir, lake, "")
	r, err := lakecheck.Run(context.Background(), bin, nil, "run", "ingest", "--config", cfg)
	if err != nil || (r.Code != 0 && r.Code != 1) {
		t.Fatalf("ingest: exit %d, %v\n%s", r.Code, err, r.Stderr)
	}
	if r.Code == 0 {
		for _, tbl := range []string{"bronze/events", "bronze/rejects"} {
			if txt := tableText(t, lake, tbl); strings.Contains(txt, outsideMarker) {
				t.Errorf("%s holds data read through a symlink out of the lake:\n%s", tbl, txt)
			}
		}
		if txt := tableText(t, lake, "bronze/events"); !strings.Contains(txt, "inside-1") {
			t.Errorf("the object inside the lake was not ingested:\n%s", txt)
		}
	} else if strings.Contains(r.Stderr+r.Stdout, outsideMarker) {
		t.Errorf("ingest printed data from outside the lake:\n%s", r.Stderr)
	}

	// Paths in the config that climb out of the lake: refused, and nothing appears outside.
	before := listTree(t, dir)
	for _, extra := range []string{
		"tables: {bronze: ../escaped/bronze}\n",
		"tables: {silver: ../../escaped/silver}\n",
		"stream: {checkpoint: ../escaped/ckpt}\n",
	} {
		lake2 := filepath.Join(dir, "lake2")
		cfg2 := lakecheck.WriteConfig(t, t.TempDir(), lake2, extra)
		for _, job := range []string{"ingest", "stream"} {
			r, err := lakecheck.Run(context.Background(), bin, nil, "run", job, "--config", cfg2)
			if err != nil {
				t.Fatal(err)
			}
			if r.Code == 0 {
				t.Errorf("run %s with %q succeeded; a path out of the lake must be refused", job, strings.TrimSpace(extra))
			}
		}
	}
	landingOut := lakecheck.WriteConfig(t, t.TempDir(), lake, "landing: {path: ../outside/}\n")
	r, err = lakecheck.Run(context.Background(), bin, nil, "run", "ingest", "--config", landingOut)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code == 0 {
		if txt := tableText(t, lake, "bronze/events"); strings.Contains(txt, outsideMarker) {
			t.Errorf("landing.path ../outside/ read data from outside the lake")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "escaped")); err == nil {
		t.Errorf("a run created %s outside the lake", filepath.Join(dir, "..", "escaped"))
	}
	for p := range listTree(t, dir) {
		if !before[p] && !strings.HasPrefix(p, filepath.Join(dir, "lake")+string(filepath.Separator)) && !strings.HasPrefix(p, lake) {
			t.Errorf("a run created %s outside the lake", p)
		}
	}
}

// TestHostileLandingNames ingests objects whose names carry spaces, unicode, leading dots and
// shell metacharacters: each is ingested under its own name or rejected with a reason.
func TestHostileLandingNames(t *testing.T) {
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	lake := filepath.Join(dir, "lake")
	landing := filepath.Join(lake, "landing/events")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"with space.json", "ünïcødé ☃.json", "..dots.json", "$(touch pwned);.json", "quote\"d.json", "tab\tname.json", "back\\slash.json"}
	for i, n := range names {
		line := `{"event_id":"n` + string(rune('0'+i)) + `","event_type":"x","amount":1,"event_time":"2026-01-10T12:00:00Z"}` + "\n"
		if err := os.WriteFile(filepath.Join(landing, n), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := lakecheck.WriteConfig(t, dir, lake, "")
	r := lakecheck.MustRun(t, bin, nil, "run", "ingest", "--config", cfg)
	bronze := tableText(t, lake, "bronze/events")
	rejects := tableText(t, lake, "bronze/rejects")
	for i, n := range names {
		id := `"n` + string(rune('0'+i)) + `"`
		if !strings.Contains(bronze, id) && !strings.Contains(rejects, jsonString(n)) {
			t.Errorf("object %q is neither in bronze nor rejected with a reason\nstdout %s", n, r.Stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("an object name was executed by a shell")
	}
	lakecheck.MustRun(t, bin, nil, "run", "stream", "--config", cfg)
}

func jsonString(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestGzipBombAndHugeLine lands a gzip bomb (256 MiB of zeros in ~256 KiB) and a 4 MiB line:
// ingest accounts both as rejects with a reason, and its peak memory stays far below their
// inflated size (decompression and line reading are bounded).
func TestGzipBombAndHugeLine(t *testing.T) {
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	lake := filepath.Join(dir, "lake")
	landing := filepath.Join(lake, "landing/events")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	// 256 gzip members of 1 MiB of zeros each: a valid multistream gzip, cheap to build.
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	gz := bytes.Repeat(member.Bytes(), 256)
	if err := os.WriteFile(filepath.Join(landing, "bomb.json.gz"), gz, 0o644); err != nil {
		t.Fatal(err)
	}
	huge := `{"event_id":"huge","event_type":"` + strings.Repeat("a", 4<<20) + `","amount":1,"event_time":"2026-01-10T12:00:00Z"}` + "\n" +
		`{"event_id":"after-huge","event_type":"x","amount":1,"event_time":"2026-01-10T12:00:00Z"}` + "\n"
	if err := os.WriteFile(filepath.Join(landing, "huge.json"), []byte(huge), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := lakecheck.WriteConfig(t, dir, lake, "")
	cmd := exec.Command(bin, "run", "ingest", "--config", cfg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, stderr.String())
	}
	maxRSSKiB := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	if maxRSSKiB > 192<<10 {
		t.Errorf("ingest peaked at %d MiB of memory for a 256 MiB bomb: decompression or line reading is not bounded", maxRSSKiB>>10)
	}
	bronze := tableText(t, lake, "bronze/events")
	if !strings.Contains(bronze, `"after-huge"`) || strings.Contains(bronze, `"huge"`) {
		t.Errorf("want the line after the huge one in bronze and the huge one not:\n%.500s", bronze)
	}
	rejects := tableText(t, lake, "bronze/rejects")
	if !strings.Contains(rejects, "bomb.json.gz") || !strings.Contains(rejects, "huge.json") {
		t.Errorf("the bomb and the huge line must be rejected with a reason:\n%.2000s", rejects)
	}
	t.Logf("peak RSS %d MiB", maxRSSKiB>>10)
}
