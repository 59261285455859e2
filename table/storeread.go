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

// MissingFileError is a read of a data file the table's log references that failed because the
// store no longer has the file (objstore.ErrNotFound: deleted by hand, by a lifecycle rule, by
// another tool's vacuum). Its text is the read's; the callers that know what the table is for
// name the ways out (errors.As).
type MissingFileError struct {
	Path string // as the log names it
	Err  error  // the read's error, which wraps objstore.ErrNotFound
}

func (e *MissingFileError) Error() string { return e.Err.Error() }
func (e *MissingFileError) Unwrap() error { return e.Err }

// missingFile is err, the error of a read of data file path, as a *MissingFileError when the
// file is gone.
func missingFile(path string, err error) error {
	if errors.Is(err, objstore.ErrNotFound) && !errors.As(err, new(*MissingFileError)) {
		return &MissingFileError{Path: path, Err: err}
	}
	return err
}

// deletionVectorError is a failure to load a file's deletion vector, which is not the data
// file itself.
type deletionVectorError struct{ err error }

func (e *deletionVectorError) Error() string { return e.err.Error() }
func (e *deletionVectorError) Unwrap() error { return e.err }

// ErrDataFileGone matches the errors ExplainMissing makes: a data file the table's log
// references is gone from storage, said with the ways out (which a caller must not cut).
var ErrDataFileGone = errors.New("table: a data file the log references is gone from storage")

// explainedMissing is a *MissingFileError said once, with the table and the ways out; it
// unwraps to the chain it explains.
type explainedMissing struct {
	msg string
	err error
}

func (e *explainedMissing) Error() string        { return e.msg }
func (e *explainedMissing) Unwrap() error        { return e.err }
func (e *explainedMissing) Is(target error) bool { return target == ErrDataFileGone }

// ExplainMissing returns err, when its cause is a data file gone (a *MissingFileError), as
// "what: data file PATH is in the log but gone from storage; wayOut": the table and the file
// once, however many prefixes the chain repeats. Other errors, and those already explained,
// are returned as they are.
func ExplainMissing(err error, what, wayOut string) error {
	var m *MissingFileError
	if !errors.As(err, &m) || errors.Is(err, ErrDataFileGone) {
		return err
	}
	return &explainedMissing{msg: fmt.Sprintf("%s: data file %s is in the log but gone from storage (%v); %s",
		what, m.Path, objstore.ErrNotFound, wayOut), err: err}
}

// Explained returns the explained error in err's chain without the prefixes the callers
// above it added (they repeat what it names), or err.
func Explained(err error) error {
	var e *explainedMissing
	if errors.As(err, &e) {
		return e
	}
	return err
}
