package gen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestGenerateClicks: every click refers to an event that was written, happens within the
// window after it, the late clicks are the last object, and a rerun writes nothing new. The
// events are read back here with encoding/json, independently of the generator.
func TestGenerateClicks(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	o := DefaultOptions()
	o.Seed, o.Lines, o.Files = 5, 3000, 3
	o.Columns = []Column{{Name: "event_id", Kind: "string", Required: true}, {Name: "event_time", Kind: "timestamp", Required: true}}
	st, err := Generate(ctx, lake, o)
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]time.Time{}
	for _, k := range st.Keys {
		data, err := objstore.ReadAll(ctx, lake, k)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			var e struct {
				ID   string `json:"event_id"`
				Time string `json:"event_time"`
			}
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			if tm, err := time.Parse(time.RFC3339Nano, e.Time); err == nil && e.ID != "" {
				events[e.ID] = tm
			}
		}
	}
	co := ClickOptions{Seed: 1, EventKeys: st.Keys, Prefix: "landing/clicks/", Files: 4, ClickRate: 0.3, ClickWindow: time.Hour, LateShare: 0.1}
	cs, err := GenerateClicks(ctx, lake, co)
	if err != nil {
		t.Fatal(err)
	}
	if cs.Clicks < 500 || cs.Late == 0 || cs.Late > cs.Clicks/5 || len(cs.Keys) != 5 || len(cs.Arrived) != 5 {
		t.Fatalf("stats %+v", cs)
	}
	var lines int64
	for i, k := range cs.Keys {
		data, err := objstore.ReadAll(ctx, lake, k)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		n := int64(0)
		for sc.Scan() {
			var c struct {
				ID    string `json:"click_id"`
				Event string `json:"event_id"`
				Time  string `json:"click_time"`
			}
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			ct, err := time.Parse(time.RFC3339Nano, c.Time)
			et, ok := events[c.Event]
			if err != nil || !ok || !ct.After(et) || ct.Sub(et) > time.Hour {
				t.Fatalf("%s: click %+v: event at %v (known %v)", k, c, et, ok)
			}
			if ct.After(cs.Arrived[i]) {
				t.Fatalf("%s: click at %v arrives at %v, before it happened", k, ct, cs.Arrived[i])
			}
			n++
		}
		if i == len(cs.Keys)-1 && n != cs.Late {
			t.Errorf("last object holds %d clicks, want the %d late ones", n, cs.Late)
		}
		if i > 0 && cs.Arrived[i].Before(cs.Arrived[i-1]) {
			t.Errorf("objects out of arrival order")
		}
		lines += n
	}
	if lines != cs.Clicks {
		t.Errorf("%d lines, stats say %d clicks", lines, cs.Clicks)
	}
	again, err := GenerateClicks(ctx, lake, co)
	if err != nil || again.Clicks != cs.Clicks {
		t.Fatalf("rerun: %+v %v", again, err)
	}
}
