package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ProbePutIfAbsent checks that b really refuses to overwrite with PutIfAbsent, as the commit
// protocol needs; some S3-compatible stores ignore If-None-Match and silently overwrite. It
// writes two objects under dir (a unique name, removed afterwards) and returns ErrNotSupported
// when the second conditional put replaced the first. Callers refuse to commit on such a store
// unless the user opted into unsafe commits.
func ProbePutIfAbsent(ctx context.Context, b Bucket, dir string) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	key := hex.EncodeToString(rnd[:]) + ".put-if-absent-probe"
	if dir = strings.TrimRight(dir, "/"); dir != "" {
		key = dir + "/" + key
	}
	if err := PutBytesIfAbsent(ctx, b, key, []byte("first")); err != nil {
		return fmt.Errorf("objstore: probe put-if-absent: %w", err)
	}
	defer b.Delete(context.WithoutCancel(ctx), key)
	err := PutBytesIfAbsent(ctx, b, key, []byte("second"))
	switch {
	case errors.Is(err, ErrAlreadyExists):
		return nil
	case err == nil:
		return fmt.Errorf("objstore: probe put-if-absent: the store overwrote %s: %w", key, ErrNotSupported)
	default:
		return fmt.Errorf("objstore: probe put-if-absent: %w", err)
	}
}
