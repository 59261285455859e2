package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
)

// TestStorageError: the errors a full, over-quota or read-only file system gives a put (as os
// returns them: a *PathError from the temp file's write or sync, a *LinkError from link or
// rename) become objstore.ErrStorageFull or ErrStoreReadOnly, naming the object's file and the
// way out; anything else is left alone. A real full disk cannot be made in a test without
// privileges, so the errno is injected here, where the backend classifies it.
func TestStorageError(t *testing.T) {
	root := t.TempDir()
	b, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const key = "bronze/_delta_log/00000000000000000007.json"
	file := filepath.Join(root, "bronze", "_delta_log", "00000000000000000007.json")
	for _, tc := range []struct {
		name string
		err  error
		want error // nil: returned unchanged
		says string
	}{
		{"write ENOSPC", fmt.Errorf("file: put %s: %w", key, &fs.PathError{Op: "write", Path: ".objstore-tmp/ab", Err: syscall.ENOSPC}), objstore.ErrStorageFull, "disk is full"},
		{"sync EDQUOT", fmt.Errorf("file: put %s: %w", key, &fs.PathError{Op: "sync", Path: ".objstore-tmp/ab", Err: syscall.EDQUOT}), objstore.ErrStorageFull, "raise the quota"},
		{"link ENOSPC", fmt.Errorf("file: put %s: %w", key, &os.LinkError{Op: "link", Old: ".objstore-tmp/ab", New: key, Err: syscall.ENOSPC}), objstore.ErrStorageFull, "free space"},
		{"create EROFS", fmt.Errorf("file: put %s: create temp: %w", key, &fs.PathError{Op: "open", Path: ".objstore-tmp/ab", Err: syscall.EROFS}), objstore.ErrStoreReadOnly, "read-write"},
		{"other errno", fmt.Errorf("file: put %s: %w", key, &fs.PathError{Op: "write", Path: ".objstore-tmp/ab", Err: syscall.EIO}), nil, ""},
	} {
		got := b.storageError(key, tc.err)
		if tc.want == nil {
			if got != tc.err {
				t.Errorf("%s: %v, want it unchanged", tc.name, got)
			}
			continue
		}
		if !errors.Is(got, tc.want) || !errors.Is(got, tc.err) {
			t.Errorf("%s: %v, want %v wrapping the cause", tc.name, got, tc.want)
		}
		if !strings.Contains(got.Error(), file) || !strings.Contains(got.Error(), tc.says) {
			t.Errorf("%s: %q does not name %s and say %q", tc.name, got, file, tc.says)
		}
	}
}
