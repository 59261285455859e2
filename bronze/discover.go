package bronze

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/medallion-lake/medallion/objstore"
)

// discover finds what is left to read, in key order: objects never claimed, and claimed objects
// that changed since their last read (see change). It lists the landing prefix or, for
// event-driven ingestion, looks up only the named keys (a large prefix is not listed). Keys read
// earlier in this run are left for the next run, so that an object written without pause
// cannot keep one run going forever.
func (x *Ingester) discover(ctx context.Context, st *state, only map[string]bool, readThisRun map[string]bool) ([]fileRecord, error) {
	var out []fileRecord
	consider := func(info objstore.ObjectInfo) error {
		next := fileRecord{Key: info.Key, Size: info.Size, ETag: info.ETag, ModTime: info.ModTime.UnixMilli()}
		prev, ok := st.claimed[info.Key]
		if !ok {
			out = append(out, next)
			return nil
		}
		if readThisRun[info.Key] || (prev.Size == info.Size && (prev.ETag == "" || info.ETag == "" || prev.ETag == info.ETag)) {
			return nil
		}
		rec, ok, err := x.change(ctx, st, prev, next)
		if err != nil || !ok {
			return err
		}
		out = append(out, rec)
		return nil
	}
	if only != nil {
		keys := make([]string, 0, len(only))
		for k := range only {
			if strings.HasPrefix(k, x.opts.LandingPrefix) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			info, err := x.lake.Stat(ctx, k)
			if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalidKey) {
				continue // deleted since the event, or not a key we can read: listing reconciles
			}
			if err != nil && ctx.Err() == nil {
				// One key the store refuses to describe must not hold back the others named
				// with it; events are hints, and the reconciling listing meets this key again.
				x.log.Warn("cannot look up a notified landing object; the next listing will", "key", k, "err", err)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("bronze: stat %s: %w", k, err)
			}
			if err := consider(info); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	for info, err := range x.lake.List(ctx, x.opts.LandingPrefix, objstore.ListOptions{}) {
		if err != nil {
			return nil, fmt.Errorf("bronze: list landing %s: %w", x.opts.LandingPrefix, err)
		}
		if err := consider(info); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tailBytes is how much of the end of a read the commit record keeps, to recognise an append.
const tailBytes = 64

// change decides how to read an object that is no longer what its last read claimed (prev): an
// object that grew and still holds, where the last read ended, the bytes that read ended with
// was appended to, and only the new bytes [prev.Size, size) are read; any other change (smaller,
// same size with another ETag, different bytes at the old end, or a compressed or CSV object,
// whose appended bytes cannot be read on their own) is a rewrite, and the whole new content is
// read again. ok is false when the batch that made the last read has not committed yet: its
// record of the bytes is not there, and a later run decides.
func (x *Ingester) change(ctx context.Context, st *state, prev, next fileRecord) (fileRecord, bool, error) {
	batch := st.claimedIn[prev.Key]
	if !st.committed[batch] {
		return fileRecord{}, false, nil
	}
	appended := false
	if next.Size > prev.Size && x.opts.Format != FormatCSV && !strings.HasSuffix(prev.Key, ".gz") {
		var rec commitRecord
		data, err := objstore.ReadAll(ctx, x.ckpt, commitKey(batch))
		if err == nil {
			err = json.Unmarshal(data, &rec)
		}
		if err != nil {
			return fileRecord{}, false, fmt.Errorf("bronze: read ingest checkpoint %s: %w", commitKey(batch), err)
		}
		end, known := rec.Ends[prev.Key]
		tail := end.Tail
		switch {
		case known && end.Short:
			appended = false // the last read did not get what was listed: read it all again
		case known && len(tail) > 0:
			rc, err := x.lake.GetRange(ctx, prev.Key, prev.Size-int64(len(tail)), int64(len(tail)))
			if errors.Is(err, objstore.ErrNotFound) {
				return fileRecord{}, false, nil // deleted since the listing
			}
			if err != nil {
				return fileRecord{}, false, fmt.Errorf("bronze: read %s: %w", prev.Key, err)
			}
			now, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return fileRecord{}, false, fmt.Errorf("bronze: read %s: %w", prev.Key, err)
			}
			appended = bytes.Equal(now, tail)
		case known:
			appended = true // the last read was of an empty object: nothing to compare
		default:
			// A checkpoint written before read ends were kept: a store without ETags (a local
			// lake) grows files in place; on S3 every change is a new object.
			appended = prev.ETag == "" && next.ETag == ""
		}
	}
	if appended {
		next.Offset = prev.Size
		x.log.Info("landing object grew after it was read; reading what was appended",
			"key", next.Key, "from", prev.Size, "to", next.Size)
		return next, true, nil
	}
	next.Rewrite = true
	x.log.Warn("landing object was rewritten after it was read; reading it again in full",
		"key", next.Key, "read_size", prev.Size, "read_etag", prev.ETag, "size", next.Size, "etag", next.ETag)
	return next, true, nil
}
