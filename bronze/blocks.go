package bronze

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"unicode"
	"unicode/utf8"
)

// NDJSON is decoded in blocks of whole lines: a reader cuts the object's (decompressed) bytes
// at the last newline of every blockBytes or so, and each block is decoded on its own, so that
// the blocks of one large landing object can be decoded on every core while the object is
// still being read and the blocks before are being encoded (see blockPipeline). A block knows
// where it starts in the object, so every row and reject keeps its exact byte offset whichever
// goroutine decodes it; the serial path (Decoder.DecodeRange) decodes the same blocks in place.

// blockBytes is how much of an object one block holds, before it is cut at its last newline:
// large enough that a block is thousands of lines (the hand-off costs nothing per line), small
// enough that a 1.5 MB landing object (the harness's 1M-event case) is still cut in two.
const blockBytes = 512 << 10

// lineBlock is a run of whole lines of one object, or one line too long to hold.
type lineBlock struct {
	data []byte // whole lines; the last may lack its newline at the end of the object
	base int64  // where data[0] is, counted as the decode counts offsets (from the range start)
	// A line longer than the limit is not held: data is its first bytes, size its full length
	// with its newline, content its length without the newline, blank whether it is all
	// white space (a blank line, not a reject).
	long    bool
	size    int64
	content int64
	blank   bool
}

// lineBlocks cuts what br yields into lineBlocks.
type lineBlocks struct {
	br      *bufio.Reader
	maxLine int   // Limits.MaxLineBytes
	size    int   // blockBytes, or smaller in tests
	offset  int64 // where the next block starts
	carry   []byte
	done    bool
}

// next fills buf (its capacity reused) with the next block. ok is false once the input is
// exhausted; err is a failure to read, after which the partial line read so far is dropped
// (as a failed read of a line always was: it is counted in no block).
func (lb *lineBlocks) next(buf []byte) (blk lineBlock, ok bool, err error) {
	if lb.done {
		return lineBlock{}, false, nil
	}
	data := append(buf[:0], lb.carry...)
	lb.carry = lb.carry[:0]
	// The carried partial line holds no newline; the block reads on past it.
	target := max(lb.size, len(data)+lb.size)
	searched := len(data) // data[:searched] holds no newline
	for {
		if cap(data) < target {
			data = append(data[:cap(data)], make([]byte, target-cap(data))...)[:len(data)]
		}
		var rerr error
		data, rerr = fill(lb.br, data, target)
		if rerr == io.EOF {
			lb.done = true
			if len(data) == 0 {
				return lineBlock{}, false, nil
			}
			blk = lineBlock{data: data, base: lb.offset}
			lb.offset += int64(len(data))
			return blk, true, nil
		}
		if rerr != nil {
			lb.done = true
			// The whole lines read before the failure are still decoded.
			if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
				blk = lineBlock{data: data[:i+1], base: lb.offset}
				lb.offset += int64(i + 1)
				return blk, true, rerr
			}
			return lineBlock{}, false, rerr
		}
		if i := bytes.LastIndexByte(data[searched:], '\n'); i >= 0 {
			cut := searched + i + 1
			lb.carry = append(lb.carry, data[cut:]...)
			blk = lineBlock{data: data[:cut], base: lb.offset}
			lb.offset += int64(cut)
			return blk, true, nil
		}
		searched = len(data)
		// One line fills the block. It may still be within the limit (with its "\r\n"): read
		// on up to that; past it, the line is too long and only its first bytes are kept.
		if limit := lb.maxLine + 2; len(data) <= limit {
			target = min(2*target, limit+1)
			continue
		}
		return lb.longLine(data)
	}
}

// fill reads into data up to len target; the error is the reader's, io.EOF at the end (a
// decompressor's io.ErrUnexpectedEOF is a truncated stream, not an end, so io.ReadFull, which
// uses that error for its own meaning, does not do).
func fill(r io.Reader, data []byte, target int) ([]byte, error) {
	for len(data) < target {
		n, err := r.Read(data[len(data):target])
		data = data[:len(data)+n]
		if err != nil {
			return data, err
		}
	}
	return data, nil
}

// longLine reads the rest of a line too long to hold (its first bytes are head), counting its
// bytes and whether it is all white space, and returns it as a long block.
func (lb *lineBlocks) longLine(head []byte) (lineBlock, bool, error) {
	blk := lineBlock{long: true, base: lb.offset, size: int64(len(head))}
	var sp spaceScan
	sp.feed(head)
	crs := trailingCRs(head, 0)
	var err error
	ended := false
	for !ended {
		var part []byte
		part, err = lb.br.ReadSlice('\n')
		blk.size += int64(len(part))
		sp.feed(part)
		crs = trailingCRs(part, crs)
		switch {
		case err == nil:
			ended = true
		case err == bufio.ErrBufferFull:
			err = nil
		default:
			ended = true
		}
	}
	if err == io.EOF {
		err = nil
		lb.done = true
	} else if err != nil {
		// The line was not read to its end: it is counted in no block.
		lb.done = true
		return lineBlock{}, false, err
	}
	// Its length without its terminator, "\r"s and all, as a line that is held counts it.
	blk.content = blk.size - crs
	if sp.last == '\n' {
		blk.content--
	}
	blk.blank = sp.blank()
	blk.data = head
	lb.offset += blk.size
	return blk, true, nil
}

// trailingCRs is the run of '\r' that ends a line's bytes read so far (before its '\n'), after
// the next piece p of it; prev is the run before p.
func trailingCRs(p []byte, prev int64) int64 {
	p = bytes.TrimSuffix(p, []byte{'\n'})
	body := bytes.TrimRight(p, "\r")
	if len(body) == 0 {
		return prev + int64(len(p))
	}
	return int64(len(p) - len(body))
}

// spaceScan says whether a stream of bytes fed in pieces is all white space (as
// bytes.TrimSpace sees it), carrying a rune cut between two pieces.
type spaceScan struct {
	nonSpace bool
	pending  []byte
	last     byte
}

func (s *spaceScan) feed(p []byte) {
	if len(p) == 0 {
		return
	}
	s.last = p[len(p)-1]
	if s.nonSpace {
		return
	}
	if len(s.pending) > 0 {
		// Complete the cut rune with at most three more bytes.
		k := min(len(p), utf8.UTFMax-len(s.pending))
		had := len(s.pending)
		joined := append(s.pending, p[:k]...)
		if !utf8.FullRune(joined) {
			s.pending = joined // k == len(p): still cut
			return
		}
		r, size := utf8.DecodeRune(joined)
		s.pending = s.pending[:0]
		if r == utf8.RuneError || !unicode.IsSpace(r) {
			s.nonSpace = true
			return
		}
		p = p[size-had:]
	}
	for len(p) > 0 {
		c := p[0]
		if c < utf8.RuneSelf {
			if asciiSpace[c] == 0 {
				s.nonSpace = true
				return
			}
			p = p[1:]
			continue
		}
		if !utf8.FullRune(p) {
			s.pending = append(s.pending[:0], p...)
			return
		}
		r, size := utf8.DecodeRune(p)
		if r == utf8.RuneError || !unicode.IsSpace(r) {
			s.nonSpace = true
			return
		}
		p = p[size:]
	}
}

func (s *spaceScan) blank() bool { return !s.nonSpace && len(s.pending) == 0 }

var asciiSpace = [256]uint8{'\t': 1, '\n': 1, '\v': 1, '\f': 1, '\r': 1, ' ': 1}

// decodeBlock decodes the lines of one block into d's batches. With flush set it hands full
// batches to d.Flush as it goes (the serial path); a pipeline's block decoders hold the whole
// block and leave the writing to the pipeline.
func (d *Decoder) decodeBlock(ctx context.Context, st *ObjectStats, key string, blk lineBlock, ingestTime int64, flush bool) error {
	if blk.long {
		st.Bytes += blk.size
		if blk.blank {
			st.BlankLines++
			return nil
		}
		body := bytes.TrimRight(blk.data, "\r\n")
		d.appendReject(st, rejected{key: key, offset: blk.base, raw: body, rawSize: blk.content}, ReasonTooLong,
			fmt.Sprintf("line of %d bytes exceeds the %d-byte limit", blk.content, d.limits.MaxLineBytes), ingestTime)
		if flush {
			if err := d.maybeFlush(ctx, blk.size); err != nil {
				return &ioError{err}
			}
		}
		return nil
	}
	data := blk.data
	for pos, n := 0, 0; pos < len(data); n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// A run of blank lines costs a scan of its bytes: a gzip object of blank lines
		// inflates a thousandfold, and a line's worth of work for each of them cost about
		// 38 s of CPU per GiB. Lines with other white space (U+00A0) go the per-line way,
		// which counts them the same.
		if skipped, lines := blankRun(data[pos:]); lines > 0 {
			st.BlankLines += lines
			st.Bytes += int64(skipped)
			pos += skipped
			continue
		}
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		size := int64(end - pos)
		d.line(st, key, blk.base+int64(pos), data[pos:end], size, ingestTime)
		st.Bytes += size
		pos = end
		if flush {
			if err := d.maybeFlush(ctx, size); err != nil {
				return &ioError{err}
			}
		}
	}
	return nil
}

// blankRun measures the whole lines of ASCII white space at the front of b.
func blankRun(b []byte) (n int, lines int64) {
	for i, c := range b {
		if c == '\n' {
			lines++
			n = i + 1
			continue
		}
		if asciiSpace[c] == 0 {
			break
		}
	}
	return n, lines
}

func (d *Decoder) lineBlocks(br *bufio.Reader, offset int64) *lineBlocks {
	size := blockBytes
	if d.blockBytes > 0 {
		size = d.blockBytes
	}
	return &lineBlocks{br: br, maxLine: d.limits.MaxLineBytes, size: size, offset: offset}
}

// decodeLinesSerial decodes an NDJSON stream block by block on this goroutine.
func (d *Decoder) decodeLinesSerial(ctx context.Context, br *bufio.Reader, key string, ingestTime int64, st *ObjectStats) error {
	lb := d.lineBlocks(br, st.Bytes)
	for {
		blk, ok, err := lb.next(d.block)
		if ok {
			d.block = blk.data[:0]
			if derr := d.decodeBlock(ctx, st, key, blk, ingestTime, true); derr != nil {
				return derr
			}
		}
		if err != nil || !ok {
			return err
		}
	}
}

// blockPipeline decodes the blocks of an object on other goroutines, at most depth blocks at a
// time, and hands their batches to write in the object's order: reading, decoding and writing
// overlap, and one large object is decoded on every core. The rows, and so the data files,
// are the same as the serial path's, in the same order.
type blockPipeline struct {
	depth int
	pool  *decoderPool
	// write takes a decoded block's batches (and must leave them for Reset).
	write func(ctx context.Context, dec *Decoder) error
}

// decoderPool keeps block decoders, with their batches and block buffers grown, for the next
// block, object and batch: a batch of one landing object would otherwise grow them from
// nothing every time.
type decoderPool struct {
	newDecoder func() (*Decoder, error)
	// slots, when set, bounds the decoders in use across all workers: each holds a block and
	// its rows, so a machine with many cores (a worker each, two blocks a core in flight per
	// worker) would otherwise hold workers x cores blocks.
	slots chan struct{}

	mu   sync.Mutex
	free []*Decoder
}

// get takes a decoder, waiting for one to be put back when slots are all in use.
func (p *decoderPool) get(ctx context.Context) (*Decoder, error) {
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d, err := p.take()
	if err != nil && p.slots != nil {
		<-p.slots
	}
	return d, err
}

func (p *decoderPool) take() (*Decoder, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		d := p.free[n-1]
		p.free = p.free[:n-1]
		return d, nil
	}
	return p.newDecoder()
}

func (p *decoderPool) put(d *Decoder) {
	d.Bronze.Reset()
	d.Rejects.Reset()
	p.mu.Lock()
	p.free = append(p.free, d)
	p.mu.Unlock()
	if p.slots != nil {
		<-p.slots
	}
}

type pendingBlock struct {
	dec  *Decoder
	st   ObjectStats
	err  error
	done chan struct{}
}

// run decodes the NDJSON stream br for d (whose base, key and ingest time the blocks share)
// and adds the blocks' counts to st, as d.decodeLinesSerial would.
func (p *blockPipeline) run(ctx context.Context, d *Decoder, br *bufio.Reader, key string, ingestTime int64, st *ObjectStats) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan *pendingBlock, p.depth)
	var readErr error
	go func() {
		defer close(queue)
		lb := d.lineBlocks(br, st.Bytes)
		for ctx.Err() == nil {
			dec, err := p.pool.get(ctx)
			if err != nil {
				if ctx.Err() == nil {
					readErr = err
				}
				return
			}
			blk, ok, err := lb.next(dec.block)
			if !ok {
				p.pool.put(dec)
				readErr = err
				return
			}
			dec.block = blk.data[:0]
			dec.base = d.base
			pb := &pendingBlock{dec: dec, done: make(chan struct{})}
			go func() {
				defer close(pb.done)
				pb.err = dec.decodeBlock(ctx, &pb.st, key, blk, ingestTime, false)
			}()
			select {
			case queue <- pb:
			case <-ctx.Done():
				<-pb.done
				p.pool.put(dec)
				return
			}
			if err != nil {
				readErr = err
				return
			}
		}
	}()
	var firstErr error
	for pb := range queue {
		<-pb.done
		if firstErr == nil && pb.err != nil {
			firstErr = pb.err
		}
		if firstErr == nil {
			st.merge(pb.st)
			if err := p.write(ctx, pb.dec); err != nil {
				firstErr = &ioError{err}
			}
		}
		if firstErr != nil {
			cancel()
		}
		p.pool.put(pb.dec)
	}
	// The queue is closed: the reader has returned, and readErr is its last word.
	if firstErr != nil {
		return firstErr
	}
	if readErr != nil {
		return readErr
	}
	return ctx.Err()
}

// merge adds o's counts to s.
func (s *ObjectStats) merge(o ObjectStats) {
	s.Lines += o.Lines
	s.Rows += o.Rows
	s.Rejected += o.Rejected
	s.BlankLines += o.BlankLines
	s.Bytes += o.Bytes
	addReasons(&s.ByReason, o.ByReason)
}
