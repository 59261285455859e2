package jobs

import (
	"testing"

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
