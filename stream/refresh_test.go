package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestRefreshJoinGoldRefusals: the refresh of a join's gold names an unknown gold, and refuses
// one of a join that has never run (its sources' silver tables missing) before it writes
// anything.
func TestRefreshJoinGoldRefusals(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	opts := JoinOptions{Lake: lake, Join: crashJoin(), Clock: runStreamClock}
	if _, err := RefreshJoinGold(ctx, opts, "nosuch"); err == nil || !strings.Contains(err.Error(), "join j has no gold nosuch") {
		t.Errorf("refresh of an unknown gold: %v", err)
	}
	rep, err := RefreshJoinGold(ctx, opts, "jcount")
	if !errors.Is(err, ErrRefreshRefused) || !strings.Contains(err.Error(), "join j has not run") {
		t.Errorf("refresh of a join that has not run: %v", err)
	}
	if rep.Name != "jcount" || rep.Batch != -1 || rep.Commit != nil {
		t.Errorf("report of the refused refresh = %+v", rep)
	}
	for o, err := range lake.List(ctx, "", objstore.ListOptions{}) {
		t.Errorf("the refused refresh wrote %s (%v)", o.Key, err)
	}
}
