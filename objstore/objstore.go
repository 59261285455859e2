// Package objstore owns the one abstraction every other package uses to reach storage: a flat
// key/value Bucket with put-if-absent, the primitive the Delta commit protocol rests on.
//
// Keys are slash-separated, relative ("a/b/c.json"): no leading slash, no empty, "." or ".."
// segments, no NUL bytes. Backends live in subpackages (mem, file, s3); decorators (prefix,
// metrics, fault injection) wrap any Bucket.
//
// Crash guarantees: a Put or PutIfAbsent is atomic: after a crash a key holds either its old
// content or the new content in full, never a prefix. PutIfAbsent has exactly one winner per key.
// A call that returns an error other than the sentinels below may or may not have taken effect;
// callers that must know (the commit protocol) read the key back.
package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"
)

// ErrNotFound reports a key that does not exist.
var ErrNotFound = errors.New("objstore: object not found")

// ErrAlreadyExists reports that PutIfAbsent lost: the key already exists (HTTP 412 on S3).
var ErrAlreadyExists = errors.New("objstore: object already exists")

// ErrInvalidKey reports a key that breaks the key rules (absolute, "..", empty segment, NUL).
var ErrInvalidKey = errors.New("objstore: invalid key")

// ErrStorageFull reports a write the store refused for lack of room: a full disk or an
// exhausted quota (ENOSPC, EDQUOT on a file system; MinIO's XMinioStorageFull or a bucket quota,
// HTTP 507 Insufficient Storage). Nothing was stored, and retrying cannot help until space is
// freed, so callers fail at once instead of retrying.
var ErrStorageFull = errors.New("objstore: storage full")

// ErrStoreReadOnly reports a write to a store that refuses all writes (a file system mounted
// read-only, EROFS). Nothing was stored; retrying cannot help.
var ErrStoreReadOnly = errors.New("objstore: store is read-only")

// ErrNotSupported reports an operation the backend cannot perform safely (for example
// put-if-absent on a store without conditional writes).
var ErrNotSupported = errors.New("objstore: operation not supported")

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
	ETag    string
}

// ListOptions narrows a listing. Listings are always recursive (flat keys) and in ascending
// byte order of the key.
type ListOptions struct {
	// StartAfter skips every key <= StartAfter (S3's ListObjectsV2 StartAfter).
	StartAfter string
}

// Bucket is a flat object store.
type Bucket interface {
	// Get opens the whole object. ErrNotFound when missing.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// GetRange opens length bytes from offset; length < 0 reads to the end. A range that runs
	// past the end is cut at the end; an offset at or past the end yields an empty body.
	GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// Put stores the object atomically, replacing any previous content. size is the byte
	// count of r, or -1 when unknown.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// PutIfAbsent stores the object only if the key does not exist yet: ErrAlreadyExists
	// otherwise. Exactly one of several concurrent callers wins.
	PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error
	// List yields the objects whose key starts with prefix, in ascending key order.
	List(ctx context.Context, prefix string, opts ListOptions) iter.Seq2[ObjectInfo, error]
	// Delete removes the object; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Stat describes the object. ErrNotFound when missing.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Close releases what the backend holds (idle connections); the bucket is not used after
	// it. Whoever opened a bucket closes it. Decorators close what they wrap, except a
	// WithPrefix view, which does not own its parent and closes nothing.
	Close() error
}

// ValidateKey checks a key against the key rules shared by every backend.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("%w: %q contains a NUL byte", ErrInvalidKey, key)
	}
	if strings.HasPrefix(key, "/") {
		return fmt.Errorf("%w: %q is absolute", ErrInvalidKey, key)
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty path segment", ErrInvalidKey, key)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidKey, key, seg)
		}
	}
	return nil
}

// ValidatePrefix checks a listing prefix: empty, or a key prefix that could start a valid key
// (a trailing slash is allowed).
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return ValidateKey(strings.TrimSuffix(prefix, "/") + "/x")
}

// CheckPrefix is how every Bucket's List begins: an invalid prefix (ValidatePrefix) yields
// its error alone, and list runs only for a valid one.
func CheckPrefix(prefix string, list iter.Seq2[ObjectInfo, error]) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if err := ValidatePrefix(prefix); err != nil {
			yield(ObjectInfo{}, err)
			return
		}
		list(yield)
	}
}

// ReadAll reads a whole object into memory.
func ReadAll(ctx context.Context, b Bucket, key string) ([]byte, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("objstore: read %s: %w", key, err)
	}
	return data, nil
}

// PutBytes stores data under key.
func PutBytes(ctx context.Context, b Bucket, key string, data []byte) error {
	return b.Put(ctx, key, bytes.NewReader(data), int64(len(data)))
}

// PutBytesIfAbsent stores data under key unless the key exists (ErrAlreadyExists).
func PutBytesIfAbsent(ctx context.Context, b Bucket, key string, data []byte) error {
	return b.PutIfAbsent(ctx, key, bytes.NewReader(data), int64(len(data)))
}

// ListAll collects a listing into a slice.
func ListAll(ctx context.Context, b Bucket, prefix string, opts ListOptions) ([]ObjectInfo, error) {
	var out []ObjectInfo
	for info, err := range b.List(ctx, prefix, opts) {
		if err != nil {
			return out, err
		}
		out = append(out, info)
	}
	return out, nil
}

// ReaderAt adapts ranged reads of one object to io.ReaderAt (for parquet.OpenFile).
type ReaderAt struct {
	ctx    context.Context
	bucket Bucket
	key    string
	size   int64
}

// NewReaderAt returns an io.ReaderAt over key, whose size the caller already knows (from Stat
// or from a Delta add action). The context bounds every read.
func NewReaderAt(ctx context.Context, b Bucket, key string, size int64) *ReaderAt {
	return &ReaderAt{ctx: ctx, bucket: b, key: key, size: size}
}

// Size returns the object's size.
func (r *ReaderAt) Size() int64 { return r.size }

// ReadAt implements io.ReaderAt with one ranged read per call.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	want := int64(len(p))
	if off+want > r.size {
		want = r.size - off
	}
	rc, err := r.bucket.GetRange(r.ctx, r.key, off, want)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p[:want])
	if err != nil {
		return n, fmt.Errorf("objstore: ranged read %s@%d: %w", r.key, off, err)
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}
