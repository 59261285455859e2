package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 100 * time.Millisecond}
	for attempt, want := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 4: 80 * time.Millisecond,
		5: 100 * time.Millisecond, 60: 100 * time.Millisecond} {
		for range 100 {
			if d := b.Delay(attempt); d < want/2 || d > want {
				t.Fatalf("Delay(%d) = %v, want within [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
	if d := (Backoff{}).Delay(3); d != 0 {
		t.Fatalf("zero backoff waits %v", d)
	}
}

func TestSleepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep on a cancelled context: %v", err)
	}
}
