package objstore

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"
)

// prefixed roots a bucket at a folder: keys in are joined to the prefix, keys out are stripped.
type prefixed struct {
	b      Bucket
	prefix string // "" or ends in "/"
	err    error  // set when the prefix itself is invalid; every call reports it
}

// WithPrefix returns b rooted at the folder prefix ("tables/events" and "tables/events/" are
// the same folder): a Delta table is a bucket rooted at its folder. An invalid prefix yields a
// bucket whose every call fails with ErrInvalidKey.
func WithPrefix(b Bucket, prefix string) Bucket {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return b
	}
	if err := ValidateKey(prefix); err != nil {
		return &prefixed{b: b, err: fmt.Errorf("objstore: prefix: %w", err)}
	}
	return &prefixed{b: b, prefix: prefix + "/"}
}

func (p *prefixed) full(key string) (string, error) {
	if p.err != nil {
		return "", p.err
	}
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return p.prefix + key, nil
}

func (p *prefixed) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, err
	}
	return p.b.Get(ctx, k)
}

func (p *prefixed) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, err
	}
	return p.b.GetRange(ctx, k, offset, length)
}

func (p *prefixed) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	k, err := p.full(key)
	if err != nil {
		return err
	}
	return p.b.Put(ctx, k, r, size)
}

func (p *prefixed) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	k, err := p.full(key)
	if err != nil {
		return err
	}
	return p.b.PutIfAbsent(ctx, k, r, size)
}

func (p *prefixed) Delete(ctx context.Context, key string) error {
	k, err := p.full(key)
	if err != nil {
		return err
	}
	return p.b.Delete(ctx, k)
}

func (p *prefixed) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	k, err := p.full(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.b.Stat(ctx, k)
	info.Key = strings.TrimPrefix(info.Key, p.prefix)
	return info, err
}

func (p *prefixed) List(ctx context.Context, prefix string, opts ListOptions) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if p.err != nil {
			yield(ObjectInfo{}, p.err)
			return
		}
		if err := ValidatePrefix(prefix); err != nil {
			yield(ObjectInfo{}, err)
			return
		}
		inner := opts
		if opts.StartAfter != "" {
			inner.StartAfter = p.prefix + opts.StartAfter
		}
		for info, err := range p.b.List(ctx, p.prefix+prefix, inner) {
			info.Key = strings.TrimPrefix(info.Key, p.prefix)
			if !yield(info, err) || err != nil {
				return
			}
		}
	}
}

// Close does nothing: a view does not own the bucket it is rooted in.
func (p *prefixed) Close() error { return nil }
