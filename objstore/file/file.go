// Package file is the embedded default Bucket: objects are plain files under a root directory,
// one file per key ("a/b/c.json" is ROOT/a/b/c.json), so a lake on disk is readable by any
// Delta reader pointed at the same folder.
//
// Every access goes through an os.Root, so no key, symlink or ".." can reach outside the root.
// Writes go to a temporary file under ROOT/.objstore-tmp, are fsynced, and are then renamed
// (Put) or hard-linked (PutIfAbsent) into place, and the parent directory is fsynced.
//
// Crash guarantees: after a crash a key holds either its previous content or the new content in
// full, never a prefix; PutIfAbsent has exactly one winner per key, across processes too, because
// link(2) refuses to replace an existing name. A crash can leave files in ROOT/.objstore-tmp;
// they are never listed and New removes the ones older than a day.
//
// Limits of a file system compared with S3: a key cannot also be a "directory" of other keys
// (both "a" and "a/b" cannot exist), and keys whose first segment is ".objstore-tmp" are
// reserved.
package file

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/medallion-lake/medallion/objstore"
)

// tmpDir holds in-flight writes; it sits inside the root so rename and link stay on one file system.
const tmpDir = ".objstore-tmp"

// staleTmpAge is how old an orphaned temporary file must be before New deletes it: far longer
// than any single write takes, so a concurrent writer in another process is never disturbed.
const staleTmpAge = 24 * time.Hour

// maxPlaceAttempts bounds the retries of moving a finished temp file into place when a
// concurrent Delete prunes the freshly created parent directory.
const maxPlaceAttempts = 8

// errParentIsObject keeps a blocked parent directory apart from "the key exists" in PutIfAbsent.
var errParentIsObject = errors.New("a parent of the key is an object")

// errKeyIsDir reports a key that names a directory holding other objects.
var errKeyIsDir = errors.New("the key is a directory of other objects")

// Bucket stores objects as files under one root directory. It is safe for concurrent use,
// also by several processes sharing the directory.
type Bucket struct {
	root     *os.Root
	dir      string
	readOnly bool
}

// ErrReadOnly is returned by every write to a bucket opened with OpenReadOnly.
var ErrReadOnly = fmt.Errorf("%w: the bucket is opened read-only", objstore.ErrNotSupported)

var _ objstore.Bucket = (*Bucket)(nil)

// New opens (creating it if needed) the directory root as a bucket.
func New(root string) (*Bucket, error) {
	if root == "" {
		return nil, errors.New("file: empty root directory")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("file: create root: %w", err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("file: open root: %w", err)
	}
	if err := r.MkdirAll(tmpDir, 0o755); err != nil {
		r.Close()
		return nil, fmt.Errorf("file: create %s: %w", tmpDir, err)
	}
	b := &Bucket{root: r, dir: root}
	b.removeStaleTemps(time.Now().Add(-staleTmpAge))
	return b, nil
}

// OpenReadOnly opens the existing directory root as a bucket for reading only: it creates
// nothing (neither root nor the temp directory), removes no stale temporary files, and every
// write fails with ErrReadOnly. A missing root is an error wrapping fs.ErrNotExist.
func OpenReadOnly(root string) (*Bucket, error) {
	if root == "" {
		return nil, errors.New("file: empty root directory")
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("file: open root: %w", err)
	}
	return &Bucket{root: r, dir: root, readOnly: true}, nil
}

// writable refuses op on a read-only bucket.
func (b *Bucket) writable(op, key string) error {
	if b.readOnly {
		return fmt.Errorf("file: %s %s: %w", op, key, ErrReadOnly)
	}
	return nil
}

// Close releases the root directory handle.
func (b *Bucket) Close() error { return b.root.Close() }

// Root returns the directory the bucket was opened on.
func (b *Bucket) Root() string { return b.dir }

// removeStaleTemps is best effort: a leftover temp file wastes space but is otherwise harmless.
func (b *Bucket) removeStaleTemps(before time.Time) {
	d, err := b.root.Open(tmpDir)
	if err != nil {
		return
	}
	entries, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().Before(before) {
			_ = b.root.Remove(path.Join(tmpDir, e.Name()))
		}
	}
}

func checkKey(key string) error {
	if err := objstore.ValidateKey(key); err != nil {
		return err
	}
	if key == tmpDir || strings.HasPrefix(key, tmpDir+"/") {
		return fmt.Errorf("%w: %q is reserved by the file backend", objstore.ErrInvalidKey, key)
	}
	return nil
}

// notFound maps "no such file" and "a parent is a file" to ErrNotFound.
func notFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// openRegular opens key for reading, treating a directory as a missing object.
func (b *Bucket) openRegular(ctx context.Context, op, key string) (*os.File, fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := checkKey(key); err != nil {
		return nil, nil, err
	}
	f, err := b.root.Open(key)
	if err != nil {
		if notFound(err) {
			return nil, nil, fmt.Errorf("file: %s %s: %w", op, key, objstore.ErrNotFound)
		}
		return nil, nil, fmt.Errorf("file: %s %s: %w", op, key, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("file: %s %s: %w", op, key, err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("file: %s %s: %w", op, key, objstore.ErrNotFound)
	}
	return f, info, nil
}

// Get implements objstore.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	f, _, err := b.openRegular(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	return f, nil
}

type rangeReader struct {
	io.Reader
	f *os.File
}

func (r rangeReader) Close() error { return r.f.Close() }

// GetRange implements objstore.Bucket.
func (b *Bucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 {
		return nil, fmt.Errorf("file: get %s: negative offset %d", key, offset)
	}
	f, info, err := b.openRegular(ctx, "get", key)
	if err != nil {
		return nil, err
	}
	size := info.Size()
	if offset > size {
		offset = size
	}
	if length < 0 || offset+length > size {
		length = size - offset
	}
	return rangeReader{Reader: io.NewSectionReader(f, offset, length), f: f}, nil
}

// Stat implements objstore.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	f, info, err := b.openRegular(ctx, "stat", key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	f.Close()
	return objstore.ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()}, nil
}

// writeTemp copies r into a fresh, fsynced temporary file and returns its root-relative name.
func (b *Bucket) writeTemp(ctx context.Context, key string, r io.Reader, size int64) (string, error) {
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	name := path.Join(tmpDir, hex.EncodeToString(rnd[:]))
	f, err := b.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		// Someone removed the temp directory (a cleanup script, rm -rf of debris): recreate it.
		if err = b.root.MkdirAll(tmpDir, 0o755); err == nil {
			f, err = b.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}
	}
	if err != nil {
		return "", fmt.Errorf("file: put %s: create temp: %w", key, err)
	}
	fail := func(err error) (string, error) {
		f.Close()
		_ = b.root.Remove(name)
		return "", fmt.Errorf("file: put %s: %w", key, err)
	}
	n, err := copyBody(ctx, f, r)
	if err != nil {
		return fail(err)
	}
	if size >= 0 && n != size {
		return fail(fmt.Errorf("read %d bytes, caller announced %d", n, size))
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = b.root.Remove(name)
		return "", fmt.Errorf("file: put %s: %w", key, err)
	}
	return name, nil
}

// copyBuffer is the piece size of a copy from a reader that cannot write itself out: a state
// file comes through a pipe in 256 KiB chunks (gold.WriteDelta), and os.File.ReadFrom copied
// each through 32 KiB pieces, a pipe hand-off and a write(2) apiece.
const copyBuffer = 256 << 10

// copyBody copies r to f, stopping when the context ends. A reader that writes itself out (an
// encoded data file's chunks, a bytes.Reader) hands its bytes to write(2) as they are; any
// other is read into one buffer of copyBuffer bytes.
func copyBody(ctx context.Context, f io.Writer, r io.Reader) (int64, error) {
	w := ctxWriter{ctx: ctx, w: f}
	if wt, ok := r.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.CopyBuffer(w, r, make([]byte, copyBuffer))
}

// ctxWriter stops a long copy when the context ends. It has no ReadFrom, so that io.CopyBuffer
// uses the caller's buffer and not os.File's 32 KiB pieces.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// place moves the finished temp file to key with move (rename or link), creating parent
// directories; it retries when a concurrent Delete pruned a parent in between.
func (b *Bucket) place(key, tmp string, move func(oldname, newname string) error) error {
	parent := path.Dir(key)
	var err error
	for range maxPlaceAttempts {
		if parent != "." {
			if err = b.root.MkdirAll(parent, 0o755); err != nil {
				if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
					return fmt.Errorf("%w (%v)", errParentIsObject, err)
				}
				return err
			}
		}
		err = move(tmp, key)
		if err == nil {
			b.syncDir(parent)
			return nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue // a concurrent Delete pruned the parent
		}
		if info, lerr := b.root.Lstat(key); lerr == nil && info.IsDir() {
			// An empty directory is no object: a crash between MkdirAll and the move, or a
			// Delete racing a Put, can leave one. Remove fails if it holds objects.
			if b.root.Remove(key) == nil {
				continue
			}
			return errKeyIsDir
		}
		break
	}
	return err
}

// syncDir makes a rename or link durable; failures are ignored because some file systems
// cannot fsync a directory, and the data itself is already synced.
func (b *Bucket) syncDir(dir string) {
	d, err := b.root.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	d.Close()
}

// stage is the first half of a put: it checks that the bucket is writable, ctx and the key,
// then writes r to a temporary file, whose name it returns for place.
func (b *Bucket) stage(ctx context.Context, key string, r io.Reader, size int64) (string, error) {
	if err := b.writable("put", key); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := checkKey(key); err != nil {
		return "", err
	}
	tmp, err := b.writeTemp(ctx, key, r, size)
	if err != nil {
		return "", b.storageError(key, err)
	}
	return tmp, nil
}

// Put implements objstore.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	tmp, err := b.stage(ctx, key, r, size)
	if err != nil {
		return err
	}
	if err := b.place(key, tmp, b.root.Rename); err != nil {
		_ = b.root.Remove(tmp)
		return b.storageError(key, fmt.Errorf("file: put %s: %w", key, err))
	}
	return nil
}

// PutIfAbsent implements objstore.Bucket with link(2), which fails if the name exists, so the
// object appears complete or not at all and exactly one writer wins.
func (b *Bucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	tmp, err := b.stage(ctx, key, r, size)
	if err != nil {
		return err
	}
	defer b.root.Remove(tmp)
	err = b.place(key, tmp, b.root.Link)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EROFS):
		return b.storageError(key, fmt.Errorf("file: put %s: %w", key, err))
	case errors.Is(err, errParentIsObject), errors.Is(err, errKeyIsDir):
		return fmt.Errorf("file: put %s: %w", key, err)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("file: put %s: %w", key, objstore.ErrAlreadyExists)
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EXDEV):
		return fmt.Errorf("file: put %s: hard links unavailable, cannot put-if-absent safely: %w: %w",
			key, objstore.ErrNotSupported, err)
	default:
		return fmt.Errorf("file: put %s: %w", key, err)
	}
}

// storageError marks err, from a put of key, with objstore.ErrStorageFull when the file system
// is full or over quota (ENOSPC, EDQUOT) and with objstore.ErrStoreReadOnly when it is mounted
// read-only (EROFS), naming the file and saying the way out; any other error is returned as is.
// The object was not stored: the temporary file is removed and link or rename never ran.
func (b *Bucket) storageError(key string, err error) error {
	full := filepath.Join(b.dir, filepath.FromSlash(key))
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%w: the disk is full writing %s: free space (or raise the quota) on the file system of %s and rerun: %w",
			objstore.ErrStorageFull, full, b.dir, err)
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w: the file system is mounted read-only writing %s: remount %s read-write and rerun: %w",
			objstore.ErrStoreReadOnly, full, b.dir, err)
	}
	return err
}

// SetModTime changes an object's modification time, for tests of time travel by timestamp
// (as mem.Bucket.SetModTime).
func (b *Bucket) SetModTime(key string, t time.Time) error {
	if err := b.writable("set mod time", key); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if err := b.root.Chtimes(key, t, t); err != nil {
		if notFound(err) {
			return fmt.Errorf("file: set mod time %s: %w", key, objstore.ErrNotFound)
		}
		return fmt.Errorf("file: set mod time %s: %w", key, err)
	}
	return nil
}

// Delete implements objstore.Bucket. It also removes parent directories left empty, so a
// deleted "a/b" does not block a later object "a".
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := b.writable("delete", key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	info, err := b.root.Lstat(key)
	if err != nil {
		if notFound(err) {
			return nil
		}
		return fmt.Errorf("file: delete %s: %w", key, err)
	}
	if info.IsDir() {
		return nil // a directory is not an object
	}
	if err := b.root.Remove(key); err != nil && !notFound(err) {
		return fmt.Errorf("file: delete %s: %w", key, err)
	}
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		if b.root.Remove(dir) != nil {
			break // not empty, or already gone: either way stop pruning
		}
	}
	return nil
}

// List implements objstore.Bucket. It walks only the directories that can hold matching keys
// and yields keys in exact byte order: a directory "a" sorts as "a/", so "a-b" comes before
// "a/b", as on S3.
func (b *Bucket) List(ctx context.Context, prefix string, opts objstore.ListOptions) iter.Seq2[objstore.ObjectInfo, error] {
	return objstore.CheckPrefix(prefix, func(yield func(objstore.ObjectInfo, error) bool) {
		dir, rest := "", prefix
		if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
			dir, rest = prefix[:i+1], prefix[i+1:]
		}
		w := walker{b: b, ctx: ctx, prefix: prefix, startAfter: opts.StartAfter, yield: yield}
		w.walk(dir, rest)
	})
}

type walker struct {
	b          *Bucket
	ctx        context.Context
	prefix     string
	startAfter string
	yield      func(objstore.ObjectInfo, error) bool
}

type entry struct {
	sortKey string // name, plus "/" for a directory
	name    string
	info    fs.FileInfo // nil until stat-ed
}

// walk lists dir (a key prefix ending in "/" or empty for the root) and returns false when the
// consumer stopped or an error was yielded. Only entries whose name starts with filter are kept.
//
// A log folder holds one file per table version, so this is the hot path of snapshot refreshes
// and log cleanup: it reads the bare names (ReadDir would stat every entry on file systems that
// do not report entry types), drops by name every entry StartAfter is past, and stats the rest
// one at a time as they are yielded, so a consumer that stops early pays for what it took.
func (w *walker) walk(dir, filter string) bool {
	if err := w.ctx.Err(); err != nil {
		w.yield(objstore.ObjectInfo{}, err)
		return false
	}
	openName := strings.TrimSuffix(dir, "/")
	if openName == "" {
		openName = "."
	}
	d, err := w.b.root.Open(openName)
	if err != nil {
		if notFound(err) {
			return true
		}
		w.yield(objstore.ObjectInfo{}, fmt.Errorf("file: list %s: %w", dir, err))
		return false
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		if notFound(err) || errors.Is(err, syscall.ENOTDIR) {
			return true
		}
		w.yield(objstore.ObjectInfo{}, fmt.Errorf("file: list %s: %w", dir, err))
		return false
	}
	entries, ok := w.order(dir, filter, names)
	if !ok {
		return false
	}
	for i := range entries {
		e := &entries[i]
		full := dir + e.name
		if e.info == nil {
			info, err := w.b.root.Lstat(full)
			if notFound(err) {
				continue // deleted while listing
			}
			if err != nil {
				w.yield(objstore.ObjectInfo{}, fmt.Errorf("file: list %s: %w", full, err))
				return false
			}
			e.info = info
		}
		switch {
		case e.info.IsDir():
			if !w.walk(full+"/", "") {
				return false
			}
		case !e.info.Mode().IsRegular() || full <= w.startAfter || !strings.HasPrefix(full, w.prefix):
			// not an object, or not in the listing
		default:
			if !w.yield(objstore.ObjectInfo{Key: full, Size: e.info.Size(), ModTime: e.info.ModTime()}, nil) {
				return false
			}
		}
	}
	return true
}

// order keeps the names of dir that start with filter and that StartAfter is not past, in key
// order. A directory "a" sorts as "a/", which differs from a file "a" only against a name that
// extends "a" by a byte below '/' ("a-b"); such a name sorts right after "a", so only a name
// followed by an extension of itself is stat-ed here to learn its kind. The rest are stat-ed
// when yielded.
func (w *walker) order(dir, filter string, names []string) ([]entry, bool) {
	entries := make([]entry, 0, 16)
	for _, name := range names {
		if strings.HasPrefix(name, filter) && (dir != "" || name != tmpDir) && !w.pastAll(dir+name) {
			entries = append(entries, entry{sortKey: name, name: name})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	moved := false
	for i := 0; i+1 < len(entries); i++ {
		e := &entries[i]
		if !strings.HasPrefix(entries[i+1].name, e.name) {
			continue
		}
		info, err := w.b.root.Lstat(dir + e.name)
		switch {
		case notFound(err):
			continue // deleted while listing: the yield loop stats it again and skips it
		case err != nil:
			w.yield(objstore.ObjectInfo{}, fmt.Errorf("file: list %s: %w", dir+e.name, err))
			return nil, false
		}
		e.info = info
		if info.IsDir() {
			e.sortKey, moved = e.name+"/", true
		}
	}
	if moved {
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.sortKey, b.sortKey) })
	}
	return entries, true
}

// pastAll reports whether StartAfter is past every key the entry named full can give, whether
// it is a file (the key full) or a directory (keys starting with full + "/"): then the entry is
// skipped without a stat.
func (w *walker) pastAll(full string) bool {
	sub := full + "/"
	return w.startAfter >= sub && !strings.HasPrefix(w.startAfter, sub)
}
