package gen

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/objstore"
)

// ClickOptions shape a click stream derived from events already in a landing prefix: the second
// source of the demo's join (impressions -> clicks). Each click refers to an event by its id and
// happens within ClickWindow after it; most arrive seconds after they happen, LateShare of them
// arrive together at the end (a click collector that was down and then caught up), late enough
// for a watermark to have passed them.
type ClickOptions struct {
	// Seed makes the clicks reproducible: same events, seed and options, same bytes.
	Seed int64
	// EventKeys are the event objects to derive clicks from (Stats.Keys of Generate), read in
	// order; lines that are not an event with an id and a time are skipped, as a join would.
	EventKeys []string
	// IDColumn and TimeColumn name the events' id and event time (default event_id, event_time).
	IDColumn, TimeColumn string
	// Prefix is the clicks' landing prefix (e.g. landing/clicks/).
	Prefix string
	// Files is the number of objects the on-time clicks are spread over (>= 1); the late
	// clicks get one more.
	Files int
	// ClickRate is the share of events clicked, in [0, 1].
	ClickRate float64
	// ClickWindow bounds click time - event time: (0, ClickWindow].
	ClickWindow time.Duration
	// LateShare is the share of clicks delivered in the final, late object, in [0, 1].
	LateShare float64
	// Until drops clicks that would happen after it (they have not happened yet); zero: none.
	Until time.Time
}

// withDefaults returns o with every unset field at its default.
func (o ClickOptions) withDefaults() ClickOptions {
	if o.IDColumn == "" {
		o.IDColumn = "event_id"
	}
	if o.TimeColumn == "" {
		o.TimeColumn = "event_time"
	}
	return o
}

// ClickStats is what GenerateClicks wrote, as an oracle for tests.
type ClickStats struct {
	Clicks int64 `json:"clicks"`
	// Late clicks are those in the last object.
	Late int64 `json:"late"`
	// Keys are the objects in arrival order; Arrived[i] is when Keys[i]'s last click arrived.
	Keys    []string    `json:"keys"`
	Arrived []time.Time `json:"arrived"`
}

type click struct {
	id, event      string
	at, arrives    time.Time
	deliveredLater bool
}

// GenerateClicks writes clicks on the events of opts.EventKeys under opts.Prefix as NDJSON
// objects with click_id, the event's id column and click_time, in arrival order. Like
// Generate, it writes each object with put-if-absent and skips an identical one, so a rerun
// writes nothing new.
func GenerateClicks(ctx context.Context, b objstore.Bucket, opts ClickOptions) (ClickStats, error) {
	opts = opts.withDefaults()
	switch {
	case opts.Files < 1:
		return ClickStats{}, fmt.Errorf("gen: Files = %d: expected at least 1", opts.Files)
	case opts.ClickRate < 0 || opts.ClickRate > 1:
		return ClickStats{}, fmt.Errorf("gen: ClickRate = %v: expected a share in [0, 1]", opts.ClickRate)
	case opts.LateShare < 0 || opts.LateShare > 1:
		return ClickStats{}, fmt.Errorf("gen: LateShare = %v: expected a share in [0, 1]", opts.LateShare)
	case opts.ClickWindow <= 0:
		return ClickStats{}, fmt.Errorf("gen: ClickWindow = %v: expected a positive duration", opts.ClickWindow)
	case opts.Prefix == "" || !strings.HasSuffix(opts.Prefix, "/"):
		return ClickStats{}, fmt.Errorf("gen: Prefix %q: expected a prefix ending in /", opts.Prefix)
	}
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0xc11c))
	var clicks []click
	for _, key := range opts.EventKeys {
		err := eachEvent(ctx, b, key, opts.IDColumn, opts.TimeColumn, func(id string, t time.Time) {
			if rng.Float64() >= opts.ClickRate {
				return
			}
			at := t.Add(time.Duration(1 + rng.Int64N(int64(opts.ClickWindow))))
			if !opts.Until.IsZero() && at.After(opts.Until) {
				return
			}
			c := click{id: fmt.Sprintf("c%07d", len(clicks)), event: id, at: at.Truncate(time.Microsecond),
				arrives: at.Add(time.Duration(rng.ExpFloat64() * float64(20*time.Second)))}
			c.deliveredLater = rng.Float64() < opts.LateShare
			clicks = append(clicks, c)
		})
		if err != nil {
			return ClickStats{}, err
		}
	}
	var onTime, late []click
	var last time.Time
	for _, c := range clicks {
		if c.arrives.After(last) {
			last = c.arrives
		}
		if c.deliveredLater {
			late = append(late, c)
		} else {
			onTime = append(onTime, c)
		}
	}
	slices.SortStableFunc(onTime, func(a, b click) int { return a.arrives.Compare(b.arrives) })
	var st ClickStats
	write := func(i int, part []click, arrived time.Time) error {
		if len(part) == 0 {
			return nil
		}
		var buf bytes.Buffer
		for _, c := range part {
			fmt.Fprintf(&buf, `{"click_id":%q,%q:%q,"click_time":%q}`+"\n", c.id, opts.IDColumn, c.event, c.at.UTC().Format(time.RFC3339Nano))
		}
		key := fmt.Sprintf("%sclicks-%05d.json", opts.Prefix, i)
		if _, err := putOnce(ctx, b, key, buf.Bytes()); err != nil {
			return err
		}
		st.Keys = append(st.Keys, key)
		st.Arrived = append(st.Arrived, arrived)
		st.Clicks += int64(len(part))
		return nil
	}
	per := (len(onTime) + opts.Files - 1) / max(opts.Files, 1)
	for i := 0; i < opts.Files && i*per < len(onTime); i++ {
		part := onTime[i*per : min((i+1)*per, len(onTime))]
		if err := write(i, part, part[len(part)-1].arrives); err != nil {
			return st, err
		}
	}
	// The late clicks arrive together, after every other click.
	if err := write(opts.Files, late, last.Add(time.Second)); err != nil {
		return st, err
	}
	st.Late = int64(len(late))
	return st, nil
}

// eachEvent calls fn with the id and time of every event line of one object (gzipped when its
// key ends in .gz); other lines are skipped.
func eachEvent(ctx context.Context, b objstore.Bucket, key, idCol, timeCol string, fn func(string, time.Time)) error {
	data, err := objstore.ReadAll(ctx, b, key)
	if err != nil {
		return fmt.Errorf("gen: read %s: %w", key, err)
	}
	var r io.Reader = bytes.NewReader(data)
	if strings.HasSuffix(key, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("gen: gunzip %s: %w", key, err)
		}
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		id, _ := rec[idCol].(string)
		ts, _ := rec[timeCol].(string)
		t, err := time.Parse(time.RFC3339Nano, ts)
		if id == "" || err != nil {
			continue
		}
		fn(id, t)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("gen: read %s: %w", key, err)
	}
	return nil
}
