package table

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/medallion-lake/medallion/objstore"
)

// ErrStoreRead reports that reading a data file failed in the object store (a refused or
// dropped connection, throttling, permissions, a cancelled context), not in its contents: the
// file itself may be fine, and a retry may succeed. The store's error is wrapped too, so
// errors.Is finds it.
var ErrStoreRead = errors.New("table: reading from the object store failed (the file itself may be fine)")

// storeReaderAt remembers the first error the object store returned to a read through it.
// Parquet decoding turns a failed read into whatever it was parsing at the time ("reading
// footer: connection refused"), and the reader wraps decoder errors as ErrBadDataFile; blame
// puts the store back in front, so an operator chases the network, not a corrupt file.
type storeReaderAt struct {
	base io.ReaderAt
	mu   sync.Mutex // parquet-go's async read mode reads column chunks concurrently
	err  error
}

func (r *storeReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.base.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return n, err
}

// blame returns err, or, when a read from the store failed before it, the store's error as
// ErrStoreRead: whatever the decoder made of the missing bytes, the file is not known bad.
func (r *storeReaderAt) blame(err error) error {
	if err == nil {
		return nil
	}
	r.mu.Lock()
	serr := r.err
	r.mu.Unlock()
	switch {
	case serr == nil:
		return err
	case errors.Is(serr, objstore.ErrNotFound):
		return serr // the file is gone, which is no read failure: say just that
	}
	return fmt.Errorf("%w: %w", ErrStoreRead, serr)
}
