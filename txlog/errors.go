package txlog

import (
	"errors"
	"fmt"
)

// ErrTableNotFound reports a location without a Delta log (no commit and no checkpoint).
var ErrTableNotFound = errors.New("txlog: table not found")

// ErrVersionNotFound reports a version or timestamp before the first reconstructable commit
// or after the last one.
var ErrVersionNotFound = errors.New("txlog: version not found")

// ErrUnsupportedFeature reports a protocol version or table feature this package does not
// implement; the message names it.
var ErrUnsupportedFeature = errors.New("txlog: unsupported Delta feature")

// ErrNotContiguous reports a log with a missing commit; the message names the gap.
var ErrNotContiguous = errors.New("txlog: versions are not contiguous")

// ErrCorruptLog reports a log file that cannot be parsed; the message names the file and line.
var ErrCorruptLog = errors.New("txlog: corrupt log")

// ErrConflict reports that a concurrent commit conflicts with this transaction. The specific
// errors below wrap it, so callers may test broad or narrow with errors.Is.
var ErrConflict = errors.New("txlog: conflicting concurrent commit")

// Specific conflicts, named after Spark's exceptions.
var (
	// ErrConcurrentAppend: a winner added files matching what this transaction read.
	ErrConcurrentAppend = fmt.Errorf("%w: concurrent append", ErrConflict)
	// ErrConcurrentDeleteRead: a winner removed a file this transaction read.
	ErrConcurrentDeleteRead = fmt.Errorf("%w: concurrent delete of a file read", ErrConflict)
	// ErrConcurrentDeleteDelete: a winner removed a file this transaction also removes.
	ErrConcurrentDeleteDelete = fmt.Errorf("%w: concurrent delete of a file deleted", ErrConflict)
	// ErrMetadataChanged: a winner changed the table metadata.
	ErrMetadataChanged = fmt.Errorf("%w: metadata changed", ErrConflict)
	// ErrProtocolChanged: a winner changed the protocol (or created the table first).
	ErrProtocolChanged = fmt.Errorf("%w: protocol changed", ErrConflict)
	// ErrConcurrentTransaction: a winner committed a txn for an appId this transaction uses,
	// or touched a domain this transaction writes.
	ErrConcurrentTransaction = fmt.Errorf("%w: concurrent transaction", ErrConflict)
)

// TxnConflictError is the ErrConcurrentTransaction of a winner that committed a txn for an
// appId this transaction commits too: as a rule the same job's batch, written by another
// process running the job, which the caller can tell by the appId.
type TxnConflictError struct {
	Version    int64  // the winner's table version
	AppID      string // the txn's appId
	TxnVersion int64  // the winner's txn version (a stream's batch)
}

func (e *TxnConflictError) Error() string {
	return fmt.Sprintf("%v: version %d committed txn appId %q", ErrConcurrentTransaction, e.Version, e.AppID)
}
func (e *TxnConflictError) Unwrap() error { return ErrConcurrentTransaction }

// ErrCommitUnknown reports that a commit's outcome could not be determined (the put failed and
// the version could not be read back). The commit may have landed; never delete its data files.
var ErrCommitUnknown = errors.New("txlog: commit outcome unknown")

// ErrTooManyAttempts reports that a commit lost the race more times than the retry limit.
var ErrTooManyAttempts = errors.New("txlog: too many commit attempts")

// ErrInvalidTransaction reports a transaction that cannot be committed as built (no metadata
// at creation, duplicate paths, ...).
var ErrInvalidTransaction = errors.New("txlog: invalid transaction")
