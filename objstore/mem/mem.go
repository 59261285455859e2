// Package mem is an in-memory Bucket for unit tests. Nothing survives the process.
package mem

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/medallion-lake/medallion/objstore"
)

type object struct {
	data    []byte
	modTime time.Time
	etag    string
}

// Bucket is a map guarded by a mutex. The zero value is not usable; call New.
type Bucket struct {
	mu      sync.RWMutex
	objects map[string]object
	now     func() time.Time
}

// New returns an empty bucket.
func New() *Bucket { return &Bucket{objects: map[string]object{}, now: time.Now} }

var _ objstore.Bucket = (*Bucket)(nil)

func (b *Bucket) lookup(key string) (object, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return object{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	o, ok := b.objects[key]
	if !ok {
		return object{}, fmt.Errorf("mem: %s: %w", key, objstore.ErrNotFound)
	}
	return o, nil
}

// Get implements objstore.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return b.GetRange(ctx, key, 0, -1)
}

// GetRange implements objstore.Bucket.
func (b *Bucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fmt.Errorf("mem: %s: negative offset %d", key, offset)
	}
	o, err := b.lookup(key)
	if err != nil {
		return nil, err
	}
	size := int64(len(o.data))
	if offset > size {
		offset = size
	}
	end := size
	if length >= 0 && offset+length < size {
		end = offset + length
	}
	return io.NopCloser(bytes.NewReader(o.data[offset:end])), nil
}

func (b *Bucket) read(ctx context.Context, key string, r io.Reader) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := objstore.ValidateKey(key); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("mem: put %s: %w", key, err)
	}
	return data, nil
}

func (b *Bucket) newObject(data []byte) object {
	sum := md5.Sum(data)
	return object{data: data, modTime: b.now(), etag: hex.EncodeToString(sum[:])}
}

// Put implements objstore.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, _ int64) error {
	return b.put(ctx, key, r, false)
}

// PutIfAbsent implements objstore.Bucket.
func (b *Bucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, _ int64) error {
	return b.put(ctx, key, r, true)
}

// put stores the object read from r under key; ifAbsent refuses a key that exists
// (ErrAlreadyExists) under the same lock that stores it, so exactly one writer wins.
func (b *Bucket) put(ctx context.Context, key string, r io.Reader, ifAbsent bool) error {
	data, err := b.read(ctx, key, r)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.objects[key]; ok && ifAbsent {
		return fmt.Errorf("mem: %s: %w", key, objstore.ErrAlreadyExists)
	}
	b.objects[key] = b.newObject(data)
	return nil
}

// List implements objstore.Bucket. It lists a snapshot of the keys taken at the first step.
func (b *Bucket) List(ctx context.Context, prefix string, opts objstore.ListOptions) iter.Seq2[objstore.ObjectInfo, error] {
	return objstore.CheckPrefix(prefix, func(yield func(objstore.ObjectInfo, error) bool) {
		b.mu.RLock()
		var infos []objstore.ObjectInfo
		for k, o := range b.objects {
			if strings.HasPrefix(k, prefix) && k > opts.StartAfter {
				infos = append(infos, objstore.ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime, ETag: o.etag})
			}
		}
		b.mu.RUnlock()
		sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
		for _, info := range infos {
			if err := ctx.Err(); err != nil {
				yield(objstore.ObjectInfo{}, err)
				return
			}
			if !yield(info, nil) {
				return
			}
		}
	})
}

// Delete implements objstore.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := objstore.ValidateKey(key); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objects, key)
	return nil
}

// Stat implements objstore.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return objstore.ObjectInfo{}, err
	}
	o, err := b.lookup(key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	return objstore.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime, ETag: o.etag}, nil
}

// SetModTime changes an object's modification time, for tests of time travel by timestamp.
func (b *Bucket) SetModTime(key string, t time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.objects[key]
	if !ok {
		return fmt.Errorf("mem: %s: %w", key, objstore.ErrNotFound)
	}
	o.modTime = t
	b.objects[key] = o
	return nil
}

// Close does nothing; the objects stay readable, as tests that reopen a lake expect.
func (b *Bucket) Close() error { return nil }
