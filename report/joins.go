package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/checkpoint"
)

// The join query's per-side figures, as custom metrics of its symmetricHashJoin state operator
// in each progress file (the names the join host writes).
const (
	joinOperator        = "symmetricHashJoin"
	metricLeftRows      = "numLeftInputRows"
	metricRightRows     = "numRightInputRows"
	metricLeftState     = "numLeftStateRows"
	metricRightState    = "numRightStateRows"
	metricLateLeftRows  = "numLateLeftRows"
	metricLateRightRows = "numLateRightRows"
	metricMatchedRows   = "numMatchedRows"
	metricLeftBytes     = "leftStateMemoryUsedBytes"
	metricRightBytes    = "rightStateMemoryUsedBytes"
)

// JoinPanel is one join query as the status page shows it: what its checkpoint's progress files
// say, summed over the batches read (state rows: the last batch's). A figure no progress file
// carried is nil and shows as "—": the page reads progress leniently, so that a join written by
// an older or newer build still shows what it can.
type JoinPanel struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Left        string `json:"left"`
	Right       string `json:"right"`
	Table       string `json:"table"`
	Quarantine  string `json:"quarantine"`
	Checkpoint  string `json:"checkpoint"`
	Batches     int    `json:"batches"`
	LastBatch   *int64 `json:"lastBatchId"`
	Watermark   string `json:"watermark,omitempty"`
	LeftRows    *int64 `json:"numLeftInputRows"`
	RightRows   *int64 `json:"numRightInputRows"`
	OutputRows  *int64 `json:"numOutputRows"`
	MatchedRows *int64 `json:"numMatchedRows"`
	LateLeft    *int64 `json:"numLateLeftRows"`
	LateRight   *int64 `json:"numLateRightRows"`
	StateLeft   *int64 `json:"numLeftStateRows"`
	StateRight  *int64 `json:"numRightStateRows"`
	// StateBytesLeft and StateBytesRight are each side's state size after the last batch read.
	StateBytesLeft  *int64 `json:"leftStateMemoryUsedBytes,omitempty"`
	StateBytesRight *int64 `json:"rightStateMemoryUsedBytes,omitempty"`
	// SourceWatermarks are each input source's watermark after the last batch read, by source
	// name (RFC 3339), from the progress's eventTime "watermark.<source>" entries.
	SourceWatermarks map[string]time.Time `json:"sourceWatermarks,omitempty"`
	// Problems are progress files that could not be read at all.
	Problems []string `json:"problems,omitempty"`
}

// joinProgressJSON is the part of a join's progress file read here; every field optional.
type joinProgressJSON struct {
	BatchID        *int64            `json:"batchId"`
	EventTime      map[string]string `json:"eventTime"`
	StateOperators []struct {
		OperatorName  string           `json:"operatorName"`
		CustomMetrics map[string]int64 `json:"customMetrics"`
	} `json:"stateOperators"`
	Sink struct {
		Metrics map[string]string `json:"metrics"`
	} `json:"sink"`
}

// JoinPanels reads every join's last limit progress files (all when limit <= 0).
func JoinPanels(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline, limit int) ([]JoinPanel, error) {
	out := []JoinPanel{}
	for _, j := range cfg.Joins {
		p, err := joinPanel(ctx, lake, j, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func joinPanel(ctx context.Context, lake objstore.Bucket, j config.Join, limit int) (JoinPanel, error) {
	p := JoinPanel{Name: j.Name, Type: j.Type, Left: j.Left, Right: j.Right, Table: j.Table, Quarantine: j.Quarantine, Checkpoint: j.Checkpoint}
	ckpt := checkpoint.Open(objstore.WithPrefix(lake, j.Checkpoint))
	ns, err := ckpt.ProgressBatches(ctx)
	if err != nil {
		return p, fmt.Errorf("report: join %s: %w", j.Name, err)
	}
	if limit > 0 && len(ns) > limit {
		ns = ns[len(ns)-limit:]
	}
	add := func(dst **int64, v int64) {
		if *dst == nil {
			*dst = new(int64)
		}
		**dst += v
	}
	for _, n := range ns {
		key := path.Join(j.Checkpoint, checkpoint.ProgressKey(n))
		data, err := ckpt.ReadProgress(ctx, n)
		if errors.Is(err, objstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return p, fmt.Errorf("report: read %s: %w", key, err)
		}
		var pj joinProgressJSON
		if err := json.Unmarshal(data, &pj); err != nil {
			p.Problems = append(p.Problems, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		p.Batches++
		id := n
		if pj.BatchID != nil {
			id = *pj.BatchID
		}
		p.LastBatch = &id
		if wm, ok := pj.EventTime["watermark"]; ok {
			if t, err := time.Parse(time.RFC3339Nano, wm); err == nil {
				p.Watermark = t.UTC().Format(time.RFC3339)
			}
		}
		for _, src := range []string{j.Left, j.Right} {
			if wm, ok := pj.EventTime["watermark."+src]; ok {
				if t, err := time.Parse(time.RFC3339Nano, wm); err == nil {
					if p.SourceWatermarks == nil {
						p.SourceWatermarks = map[string]time.Time{}
					}
					p.SourceWatermarks[src] = t.UTC()
				}
			}
		}
		if v, ok := pj.Sink.Metrics["numOutputRows"]; ok {
			var n int64
			if _, err := fmt.Sscan(v, &n); err == nil {
				add(&p.OutputRows, n)
			}
		}
		for _, op := range pj.StateOperators {
			if op.OperatorName != joinOperator {
				continue
			}
			m := op.CustomMetrics
			for name, dst := range map[string]**int64{metricLeftRows: &p.LeftRows, metricRightRows: &p.RightRows,
				metricLateLeftRows: &p.LateLeft, metricLateRightRows: &p.LateRight, metricMatchedRows: &p.MatchedRows} {
				if v, ok := m[name]; ok {
					add(dst, v)
				}
			}
			// State is a level, not a flow: the last batch's.
			for name, dst := range map[string]**int64{metricLeftState: &p.StateLeft, metricRightState: &p.StateRight,
				metricLeftBytes: &p.StateBytesLeft, metricRightBytes: &p.StateBytesRight} {
				if v, ok := m[name]; ok {
					*dst = &v
				}
			}
		}
	}
	return p, nil
}
