package report

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

// NodeStatus is one node of the pipeline graph (config.Graph) with what the status page shows
// of it: its table's version, its freshness and the late rows it has pending.
//
// Freshness is exact and read from logs and checkpoints only (no data file):
//   - silver, a join, a gold over a source or a join: the versions of the query's inputs
//     (bronze; a join's two silver tables, summed) committed after the last version its last
//     committed batch read (offsets/N), and that batch's eviction watermark: every window
//     ending at or before it is in the gold table;
//   - a derived table: its upstream's versions after the one its last pass read (its txn
//     medallion-derived-<name>), and the watermark it emitted to;
//   - landing and bronze: none here (the lag section measures ingest).
type NodeStatus struct {
	config.GraphNode
	// Exists is false when the table does not exist yet; Version is then -1.
	Exists     bool
	Version    int64
	LastCommit time.Time
	// Behind is the upstream versions not consumed yet, -1 when unknown or not measured (see
	// above); Upstream says what they are versions of ("bronze", "gold g5").
	Behind   int64
	Upstream string
	// Watermark is the event time the node's windows are complete to (zero: none yet, or
	// not a windowed table).
	Watermark time.Time
	// LatePending is the gold's quarantine rows merge-late has not folded in yet, from file
	// stats (-1: not a gold over a source or join, or unknown).
	LatePending int64
}

// GraphStatus is the pipeline graph with each node's status, nodes in config.Graph's order.
type GraphStatus struct {
	Nodes []NodeStatus
	Edges []config.GraphEdge
}

// queryPos is what a streaming query's checkpoint says of its position.
type queryPos struct {
	id string
	// read are the input versions its last committed batch read, in input order (-1: none).
	read      []int64
	watermark time.Time
	committed bool
}

// readQueryPos reads the last committed batch of the checkpoint at ckpt (zero before the first).
func readQueryPos(ctx context.Context, lake objstore.Bucket, ckpt string) (queryPos, error) {
	var qp queryPos
	d := checkpoint.Open(objstore.WithPrefix(lake, ckpt))
	id, err := d.ReadQueryID(ctx)
	if errors.Is(err, checkpoint.ErrNoQuery) {
		return qp, nil
	}
	if err != nil {
		return qp, fmt.Errorf("report: checkpoint %s: %w", ckpt, err)
	}
	qp.id = id
	n, err := d.LatestCommit(ctx)
	if err != nil || n < 0 {
		return qp, err
	}
	e, err := d.ReadOffsets(ctx, n)
	if err != nil {
		return qp, fmt.Errorf("report: checkpoint %s: %w", ckpt, err)
	}
	qp.committed = true
	if e.BatchWatermarkMs > 0 {
		qp.watermark = time.UnixMilli(e.BatchWatermarkMs).UTC()
	}
	if e.OutputWatermarkMs != nil {
		qp.watermark = time.UnixMilli(*e.OutputWatermarkMs).UTC()
	}
	ends := e.Sources
	if len(ends) == 0 {
		ends = []*source.Offset{e.End}
	}
	for _, end := range ends {
		qp.read = append(qp.read, checkpoint.ReadVersion(end))
	}
	return qp, nil
}

// PipelineGraph reads the status of every node of cfg's graph.
func PipelineGraph(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline) (*GraphStatus, error) {
	g := cfg.Graph()
	out := &GraphStatus{Edges: g.Edges}
	snaps := map[string]*txlog.Snapshot{} // by path, nil: no table
	snapOf := func(path string) (*txlog.Snapshot, error) {
		if s, ok := snaps[path]; ok {
			return s, nil
		}
		s, err := table.Open(objstore.WithPrefix(lake, path), table.Options{}).Log().Snapshot(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			s, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("report: table %s: %w", path, err)
		}
		snaps[path] = s
		return s, nil
	}
	version := func(path string) (int64, error) {
		s, err := snapOf(path)
		if s == nil || err != nil {
			return -1, err
		}
		return s.Version(), nil
	}
	queries := map[string]queryPos{} // by checkpoint
	posOf := func(ckpt string) (queryPos, error) {
		if qp, ok := queries[ckpt]; ok {
			return qp, nil
		}
		qp, err := readQueryPos(ctx, lake, ckpt)
		queries[ckpt] = qp
		return qp, err
	}
	// behind sums, over a query's inputs, the versions after the one its last batch read.
	behind := func(qp queryPos, inputs ...string) (int64, error) {
		var n int64
		for i, in := range inputs {
			v, err := version(in)
			if err != nil {
				return -1, err
			}
			read := int64(-1)
			if i < len(qp.read) {
				read = qp.read[i]
			}
			n += max(v-read, 0)
		}
		return n, nil
	}
	for _, n := range g.Nodes {
		ns := NodeStatus{GraphNode: n, Version: -1, Behind: -1, LatePending: -1}
		if n.Kind != config.NodeLanding {
			s, err := snapOf(n.Path)
			if err != nil {
				return nil, err
			}
			if s != nil {
				ns.Exists, ns.Version, ns.LastCommit = true, s.Version(), s.Timestamp()
			}
		}
		if err := nodeFreshness(ctx, lake, cfg, &ns, snapOf, posOf, behind); err != nil {
			return nil, err
		}
		out.Nodes = append(out.Nodes, ns)
	}
	return out, nil
}

// nodeFreshness fills ns's Behind, Upstream, Watermark and LatePending (see NodeStatus).
func nodeFreshness(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline, ns *NodeStatus,
	snapOf func(string) (*txlog.Snapshot, error), posOf func(string) (queryPos, error), behind func(queryPos, ...string) (int64, error)) error {
	var err error
	var qp queryPos
	var gd *config.Gold
	switch ns.Kind {
	case config.NodeSilver:
		v, _ := cfg.ForSource(ns.Name)
		if qp, err = posOf(v.Stream.Checkpoint); err != nil {
			return err
		}
		ns.Upstream = "bronze"
		ns.Behind, err = behind(qp, v.Tables.Bronze)
		return err
	case config.NodeJoin:
		j, _ := cfg.JoinByName(ns.Name)
		if qp, err = posOf(j.Checkpoint); err != nil {
			return err
		}
		l, _ := cfg.ForSource(j.Left)
		r, _ := cfg.ForSource(j.Right)
		ns.Upstream, ns.Watermark = "silver "+j.Left+" + "+j.Right, qp.watermark
		ns.Behind, err = behind(qp, l.Tables.Silver, r.Tables.Silver)
		return err
	case config.NodeGold, config.NodeDerived:
		gd, _ = cfg.GoldByName(ns.Name)
	default:
		return nil
	}
	if up, derived := cfg.UpstreamGold(*gd); derived {
		ns.Upstream = "gold " + up.Name
		us, err := snapOf(up.Table)
		if err != nil {
			return err
		}
		s, err := snapOf(gd.Table)
		if err != nil || us == nil {
			return err
		}
		read := int64(-1)
		if s != nil {
			if v, ok := s.TxnVersion(late.DerivedApp + gd.Name); ok {
				read = v
			}
			if wm, ok := s.TxnVersion(late.DerivedWatermarkApp + gd.Name); ok && wm > 0 {
				ns.Watermark = time.UnixMilli(wm).UTC()
			}
		}
		ns.Behind = max(us.Version()-read, 0)
		return nil
	}
	src := cfg.GoldSource(*gd)
	if j, ok := cfg.JoinByName(src); ok {
		if qp, err = posOf(j.Checkpoint); err != nil {
			return err
		}
		l, _ := cfg.ForSource(j.Left)
		r, _ := cfg.ForSource(j.Right)
		ns.Upstream = "silver " + j.Left + " + " + j.Right
		ns.Behind, err = behind(qp, l.Tables.Silver, r.Tables.Silver)
	} else {
		v, _ := cfg.ForSource(src)
		if qp, err = posOf(v.Stream.Checkpoint); err != nil {
			return err
		}
		ns.Upstream = "bronze"
		ns.Behind, err = behind(qp, v.Tables.Bronze)
	}
	if err != nil {
		return err
	}
	ns.Watermark = qp.watermark
	q := QuarantineLate{Gold: gd.Name, Table: gd.Quarantine}
	if qs, err := snapOf(gd.Quarantine); err != nil {
		return err
	} else if qs != nil {
		q.Exists = true
	}
	if err := q.mergeState(ctx, lake, gd, qp.id); err != nil {
		return err
	}
	ns.LatePending = q.Pending
	return nil
}
