package bronze

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// decodeAll cuts the batch's objects, in their listed order, into parts (cutParts: a function
// of the objects' listed sizes alone, never of the machine) and encodes each part into data
// files of its own, the parts on Workers goroutines at once, so that every core encodes
// Parquet. The adds are listed part after part, each part's in the order it wrote them, and
// commit keeps that order for a stream that starts from a snapshot (table.SequenceModTimes):
// reading bronze in commit order reads the batch's rows in arrival order (the objects' listing
// order, then each line's offset), and the batch becomes the same data files, holding the same
// rows, with any number of cores (the stream's micro-batches count bronze files, so its
// batches, watermarks and first arrivals are the same on every machine).
func (x *Ingester) decodeAll(ctx context.Context, b *batchRecord) ([]*txlog.Add, []*txlog.Add, Report, error) {
	sizes := make([]int64, len(b.Files))
	for i, f := range b.Files {
		sizes[i] = f.Size - f.Offset
	}
	bounds := cutParts(sizes, x.opts.PartBytes, x.opts.MaxParts)
	type result struct {
		bronze, rejects []*txlog.Add
		rep             Report
		err             error
	}
	results := make([]result, len(bounds)-1)
	// A decoder a worker, kept from part to part: its batches have grown to their size.
	decoders := make([]*Decoder, x.opts.Workers)
	err := runParts(ctx, len(results), x.opts.Workers, func(ctx context.Context, w, p int) error {
		if decoders[w] == nil {
			dec, err := NewDecoder(x.opts.Declared, x.opts.Limits)
			if err != nil {
				return err
			}
			decoders[w] = dec
		}
		r := &results[p]
		r.bronze, r.rejects, r.rep, r.err = x.worker(ctx, decoders[w], b.Files[bounds[p]:bounds[p+1]], b.IngestTime)
		return r.err
	})
	if err != nil {
		return nil, nil, Report{}, err
	}
	var bronzeAdds, rejectAdds []*txlog.Add
	var rep Report
	for _, r := range results {
		bronzeAdds = append(bronzeAdds, r.bronze...)
		rejectAdds = append(rejectAdds, r.rejects...)
		rep.merge(r.rep)
		for k, e := range r.rep.ends {
			if rep.ends == nil {
				rep.ends = map[string]readEnd{}
			}
			rep.ends[k] = e
		}
	}
	return bronzeAdds, rejectAdds, rep, nil
}

// worker decodes one part's objects with dec (empty, and left empty when it returns without
// an error) into data files of the part's own.
func (x *Ingester) worker(ctx context.Context, dec *Decoder, files []fileRecord, ingestTime int64) ([]*txlog.Add, []*txlog.Add, Report, error) {
	var rep Report
	out, err := x.openOutputs(dec)
	if err != nil {
		return nil, nil, rep, err
	}
	// NDJSON objects are decoded in blocks on every core while this goroutine writes the
	// blocks before: a batch of one large object (landing.max_files_per_trigger: 1) is not
	// decoded on one core. Up to two blocks a core are in flight, enough to keep the cores
	// busy while the writer encodes.
	dec.blockBytes = x.blockBytes
	dec.pipeline = &blockPipeline{depth: 2 * runtime.GOMAXPROCS(0), pool: x.blocks, write: out.write}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, nil, rep, err
		}
		// Exactly the listed bytes: an object still being written is read as it was listed,
		// and what is written after is a change that a later listing finds and reads.
		rc, err := x.lake.GetRange(ctx, f.Key, f.Offset, f.Size-f.Offset)
		if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalidKey) {
			// Claimed but unreadable: deleted since the listing, or a key S3 stores but the
			// lake's key rules refuse (".." or empty segments). Record it so it is not silent,
			// and go on with the other objects.
			reason, detail := ReasonObjectMissing, "the landing object was deleted after it was listed"
			if errors.Is(err, objstore.ErrInvalidKey) {
				reason, detail = ReasonInvalidKey, "the landing key cannot be read safely: "+err.Error()
			}
			var st ObjectStats
			dec.appendReject(&st, rejected{key: f.Key, offset: f.Offset}, reason, detail, ingestTime)
			rep.add(st)
			continue
		}
		if err != nil {
			return nil, nil, rep, fmt.Errorf("bronze: open %s: %w", f.Key, err)
		}
		tr := &tailReader{r: rc}
		st, err := dec.DecodeRange(ctx, tr, f.Key, x.opts.Format, ingestTime, f.Offset)
		if err == nil {
			// A decoder that stopped early (a gzip bomb) left bytes unread: count them, so
			// that a short read is told from an object cut short.
			_, err = io.Copy(io.Discard, &ctxReader{ctx: ctx, r: tr})
			if err != nil {
				err = &ioError{fmt.Errorf("bronze: read %s: %w", f.Key, err)}
			}
		}
		rc.Close()
		if err != nil {
			return nil, nil, rep, err
		}
		end := readEnd{Tail: tr.tail()}
		if want := f.Size - f.Offset; tr.n < want {
			// The object shrank or was replaced between the listing and the read: what was
			// read is kept, the missing bytes are recorded, and the new content is read again
			// in full when it is listed.
			dec.appendReject(&st, rejected{key: f.Key, offset: f.Offset + tr.n}, ReasonObjectChanged,
				fmt.Sprintf("the landing object was %d bytes when listed, but only %d bytes from offset %d could be read: it was rewritten or truncated after the listing, and its new content is read again in full", f.Size, tr.n, f.Offset), ingestTime)
			end = readEnd{Short: true}
		}
		if rep.ends == nil {
			rep.ends = map[string]readEnd{}
		}
		rep.ends[f.Key] = end
		rep.add(st)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, rep, err
	}
	bronzeAdds, rejectAdds, err := out.close(ctx)
	if err != nil {
		return nil, nil, rep, err
	}
	return bronzeAdds, rejectAdds, rep, nil
}

// workerOutput is one worker's own bronze and rejects data files, which its decoder flushes
// into as its batches fill.
type workerOutput struct {
	dec             *Decoder
	bronze, rejects *table.DataWriter
}

// openOutputs opens a worker's data files and makes dec flush into them.
func (x *Ingester) openOutputs(dec *Decoder) (*workerOutput, error) {
	bw, err := table.NewDataWriter(x.bronze.Bucket(), dec.Bronze.Schema, nil, x.opts.WriteOptions)
	if err != nil {
		return nil, err
	}
	rw, err := table.NewDataWriter(x.rejects.Bucket(), dec.Rejects.Schema, nil, x.opts.WriteOptions)
	if err != nil {
		return nil, err
	}
	x.snapMu.Lock()
	bronzeRules, rejectsRules := x.rules[x.bronze], x.rules[x.rejects]
	x.snapMu.Unlock()
	if err := bw.SetRowRules(bronzeRules); err != nil {
		return nil, fmt.Errorf("bronze: %s: %w", x.opts.BronzePath, err)
	}
	if err := rw.SetRowRules(rejectsRules); err != nil {
		return nil, fmt.Errorf("bronze: %s: %w", x.opts.RejectsPath, err)
	}
	out := &workerOutput{dec: dec, bronze: bw, rejects: rw}
	dec.Flush, dec.FlushRows = out.flush, x.opts.FlushRows
	// A decoder kept from an earlier part starts this one as a new decoder would: when it
	// flushes must depend on this part's input alone, or the files would depend on which parts
	// a worker happened to take.
	dec.held = 0
	return out, nil
}

// flush writes the decoder's batches out and empties them.
func (o *workerOutput) flush(ctx context.Context) error {
	if o.dec.Bronze.Len() > 0 {
		if err := o.bronze.Write(ctx, o.dec.Bronze); err != nil {
			return err
		}
	}
	if o.dec.Rejects.Len() > 0 {
		if err := o.rejects.Write(ctx, o.dec.Rejects); err != nil {
			return err
		}
	}
	o.dec.Bronze.Reset()
	o.dec.Rejects.Reset()
	return nil
}

// write writes a block decoder's batches, after what the worker's own decoder holds (rows of
// the objects before, in order).
func (o *workerOutput) write(ctx context.Context, bd *Decoder) error {
	if o.dec.Bronze.Len()+o.dec.Rejects.Len() > 0 {
		if err := o.flush(ctx); err != nil {
			return err
		}
	}
	if bd.Bronze.Len() > 0 {
		if err := o.bronze.Write(ctx, bd.Bronze); err != nil {
			return err
		}
	}
	if bd.Rejects.Len() > 0 {
		if err := o.rejects.Write(ctx, bd.Rejects); err != nil {
			return err
		}
	}
	return nil
}

// close flushes what is left and closes both files, returning their adds.
func (o *workerOutput) close(ctx context.Context) (bronzeAdds, rejectAdds []*txlog.Add, err error) {
	if err := o.flush(ctx); err != nil {
		return nil, nil, err
	}
	if bronzeAdds, err = o.bronze.Close(ctx); err != nil {
		return nil, nil, err
	}
	if rejectAdds, err = o.rejects.Close(ctx); err != nil {
		return nil, nil, err
	}
	return bronzeAdds, rejectAdds, nil
}
