package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/stream"
)

// TestRefreshMergeLateApp: the txn a gold's full refresh records for merge-late is the one
// merge-late reads (stream cannot import late, so it keeps its own copy of the prefix).
func TestRefreshMergeLateApp(t *testing.T) {
	if stream.MergeLateApp != late.AppIDPrefix {
		t.Fatalf("stream.MergeLateApp %q, late.AppIDPrefix %q", stream.MergeLateApp, late.AppIDPrefix)
	}
}

// TestRefreshRefusedWhileServeHoldsTheStream: a refresh of a gold while a serve holds the
// stream's lease is refused, naming the holder, and writes nothing.
func TestRefreshRefusedWhileServeHoldsTheStream(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env, err := NewEnv(ctx, testPipeline(t, dir, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Lake.Close()
	lease, err := NewLeases(env.Lake, "serve-a", 5*time.Second, nil).Acquire(ctx, "stream")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()
	_, err = Refresh(ctx, env, "events_5m")
	if !errors.Is(err, stream.ErrRefreshRefused) || !strings.Contains(err.Error(), "serve-a") {
		t.Fatalf("refresh while serve holds the stream: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gold", "events_5m")); !os.IsNotExist(err) {
		t.Errorf("a refused refresh wrote the gold table: %v", err)
	}
}
