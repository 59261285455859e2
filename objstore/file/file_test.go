package file_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/objstoretest"
)

func newBucket(t testing.TB) *file.Bucket {
	b, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestAcceptance(t *testing.T) {
	objstoretest.RunBucketTests(t, objstoretest.Config{
		New: func(t *testing.T) objstore.Bucket { return newBucket(t) },
	})
}

func TestSymlinkCannotEscapeRoot(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	b, err := file.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if data, err := objstore.ReadAll(ctx, b, "link/secret"); err == nil {
		t.Fatalf("read %q through a symlink leaving the root", data)
	}
	if err := objstore.PutBytes(ctx, b, "link/planted", []byte("x")); err == nil {
		t.Fatal("wrote through a symlink leaving the root")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file planted outside the root: %v", err)
	}
	if err := b.Delete(ctx, "link/secret"); err != nil && !errors.Is(err, objstore.ErrNotFound) {
		t.Logf("Delete through the symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatalf("Delete removed a file outside the root: %v", err)
	}
}

func TestTempFilesInvisibleAndReserved(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := file.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A crash mid-write leaves a temp file behind; it must never show up as an object.
	if err := os.WriteFile(filepath.Join(root, ".objstore-tmp", "orphan"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytes(ctx, b, "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	infos, err := objstore.ListAll(ctx, b, "", objstore.ListOptions{})
	if err != nil || len(infos) != 1 || infos[0].Key != "a" {
		t.Fatalf("List = %+v, %v; want only a", infos, err)
	}
	for _, key := range []string{".objstore-tmp/orphan", ".objstore-tmp"} {
		if _, err := b.Get(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	// The same name deeper down is an ordinary key.
	if err := objstore.PutBytes(ctx, b, "t/.objstore-tmp", []byte("y")); err != nil {
		t.Errorf("Put(t/.objstore-tmp): %v", err)
	}
}

func TestStaleTempsRemovedOnOpen(t *testing.T) {
	root := t.TempDir()
	b, err := file.New(root)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	stale := filepath.Join(root, ".objstore-tmp", "stale")
	fresh := filepath.Join(root, ".objstore-tmp", "fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	b, err = file.New(root)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temp file survived: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temp file (maybe a write in progress) was removed: %v", err)
	}
}

func TestNoTempLeftAfterWrites(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := file.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_ = objstore.PutBytes(ctx, b, "k", []byte("1"))
	_ = objstore.PutBytesIfAbsent(ctx, b, "k", []byte("2"))
	_ = objstore.PutBytesIfAbsent(ctx, b, "j", []byte("3"))
	_ = objstore.PutBytes(ctx, b, "k/child", []byte("4")) // fails: "k" is an object
	entries, err := os.ReadDir(filepath.Join(root, ".objstore-tmp"))
	if err != nil || len(entries) != 0 {
		t.Errorf("temp dir holds %d entries (%v) after the writes finished", len(entries), err)
	}
}

func TestKeyDirectoryConflicts(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	if err := objstore.PutBytes(ctx, b, "a/b", []byte("x")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, key, want string
		err             error
	}{
		{"Put over a directory", "a", "directory of other objects", objstore.PutBytes(ctx, b, "a", []byte("y"))},
		{"PutIfAbsent below an object", "a/b/c", "parent of the key is an object", objstore.PutBytesIfAbsent(ctx, b, "a/b/c", []byte("y"))},
		{"Put below an object", "a/b/c", "parent of the key is an object", objstore.PutBytes(ctx, b, "a/b/c", []byte("y"))},
	}
	for _, tc := range tests {
		if tc.err == nil || errors.Is(tc.err, objstore.ErrAlreadyExists) {
			t.Errorf("%s = %v, want a plain error", tc.name, tc.err)
		} else if msg := tc.err.Error(); !strings.Contains(msg, "put "+tc.key+":") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q should name the key and say %q", tc.name, msg, tc.want)
		}
	}
	if got, err := objstore.ReadAll(ctx, b, "a/b"); err != nil || string(got) != "x" {
		t.Errorf("a/b = %q, %v after the refused writes", got, err)
	}
}

func TestFilesAreReadableOnDisk(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := file.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := objstore.PutBytesIfAbsent(ctx, b, "_delta_log/00000000000000000000.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "_delta_log", "00000000000000000000.json"))
	if err != nil || string(got) != "{}\n" {
		t.Errorf("on disk: %q, %v", got, err)
	}
}

func BenchmarkFile(b *testing.B) {
	objstoretest.RunBenchmarks(b, func(tb testing.TB) objstore.Bucket { return newBucket(tb) })
}

func TestSetModTime(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	if err := objstore.PutBytes(ctx, b, "_delta_log/00000000000000000000.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := b.SetModTime("_delta_log/00000000000000000000.json", when); err != nil {
		t.Fatal(err)
	}
	info, err := b.Stat(ctx, "_delta_log/00000000000000000000.json")
	if err != nil || !info.ModTime.Equal(when) {
		t.Errorf("Stat = %v, %v; want ModTime %v", info.ModTime, err, when)
	}
	if err := b.SetModTime("missing", when); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("SetModTime(missing) = %v, want ErrNotFound", err)
	}
}

// An empty directory where a key should go (left by a crash between creating the parents and
// moving the file in) is not an object: writes replace it, and put-if-absent must not lose to it.
func TestEmptyDirectoryIsNoObject(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := file.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, dir := range []string{"log/00000000000000000001.json", "data/part-0"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(dir)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := objstore.PutBytesIfAbsent(ctx, b, "log/00000000000000000001.json", []byte("commit")); err != nil {
		t.Errorf("PutIfAbsent over an empty directory = %v, want success", err)
	}
	if err := objstore.PutBytes(ctx, b, "data/part-0", []byte("rows")); err != nil {
		t.Errorf("Put over an empty directory = %v, want success", err)
	}
	for key, want := range map[string]string{"log/00000000000000000001.json": "commit", "data/part-0": "rows"} {
		if got, err := objstore.ReadAll(ctx, b, key); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", key, got, err, want)
		}
	}
}

func TestTempDirRecreated(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := file.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := os.RemoveAll(filepath.Join(root, ".objstore-tmp")); err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytes(ctx, b, "k", []byte("v")); err != nil {
		t.Errorf("Put after the temp directory vanished: %v", err)
	}
}

// OpenReadOnly creates nothing, reads what is there and refuses every write.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := file.OpenReadOnly(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenReadOnly created the missing root: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := file.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if info, err := b.Stat(ctx, "a"); err != nil || info.Size != 1 {
		t.Errorf("Stat: %+v %v", info, err)
	}
	for name, err := range map[string]error{
		"Put":         b.Put(ctx, "b", strings.NewReader("y"), 1),
		"PutIfAbsent": b.PutIfAbsent(ctx, "b", strings.NewReader("y"), 1),
		"Delete":      b.Delete(ctx, "a"),
		"SetModTime":  b.SetModTime("a", time.Now()),
	} {
		if !errors.Is(err, file.ErrReadOnly) || !errors.Is(err, objstore.ErrNotSupported) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the read-only bucket left %v", entries)
	}
}
