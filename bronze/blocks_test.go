package bronze

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// wantLine is the test's own account of one generated line: what the decoder must make of it.
type wantLine struct {
	offset  int64
	blank   bool
	id      string // a row's event_id
	reason  string // a reject's reason
	content string // the line without its terminator
}

// blockTestLimits are small, so that small inputs cross block boundaries and the line limit
// in every way: lines just under and over MaxLineBytes, over a whole block, and blocks of a
// few lines.
var blockTestLimits = Limits{MaxLineBytes: 300, MaxRawBytes: 1 << 20}

// genLines writes n random lines of every kind the decoder tells apart, and what each must
// become: records (some padded to the edge of the limit), invalid JSON, lines over the limit
// (some longer than many blocks), blank lines (ASCII, U+00A0, and longer than the limit),
// "\r\n" endings, a byte-order mark, and a last line without its newline.
func genLines(rng *rand.Rand, n int, withBOM bool) ([]byte, []wantLine) {
	var data []byte
	var want []wantLine
	if withBOM {
		data = append(data, utf8BOM...)
	}
	limit := blockTestLimits.MaxLineBytes
	for i := 0; i < n; i++ {
		term := "\n"
		if rng.IntN(4) == 0 {
			term = "\r\n"
		}
		if i == n-1 && rng.IntN(2) == 0 {
			term = "" // the object ends without a newline
		}
		w := wantLine{offset: int64(len(data))}
		var content string
		switch k := rng.IntN(10); {
		case k < 5: // a record, padded to a random length up to just over the limit
			id := fmt.Sprintf("e%d", i)
			content = `{"event_id":"` + id + `","event_time":"2024-05-01T12:07:00Z","amount":1.5}`
			if rng.IntN(2) == 0 {
				pad := rng.IntN(limit + 20 - len(content))
				if rng.IntN(3) == 0 {
					pad = limit - len(content) - 16 + rng.IntN(30) // around the limit
				}
				content = `{"event_id":"` + id + `","event_type":"` + strings.Repeat("x", max(0, pad)) + `","event_time":"2024-05-01T12:07:00Z"}`
			}
			if len(content) > limit {
				w.reason = ReasonTooLong
			} else {
				w.id = id
			}
		case k < 6:
			content = `{"event_id":` + strings.Repeat("7", rng.IntN(50))
			w.reason = ReasonInvalidJSON
		case k < 7: // far over the limit, up to many blocks
			content = `{"event_id":"` + strings.Repeat("y", limit+rng.IntN(5000)) + `"}`
			w.reason = ReasonTooLong
		case k < 9:
			content = []string{"", " ", "\t \t", "\u00a0", "  \u00a0 ", strings.Repeat(" ", limit+rng.IntN(3000))}[rng.IntN(6)]
			w.blank = true
			if term == "" && content == "" {
				continue // nothing at all is not a line
			}
		default: // a record with a multi-byte character and an escape
			id := fmt.Sprintf("é%d\\n", i)
			content = `{"event_id":"` + id + `","event_time":"2024-05-01T12:07:00Z"}`
			w.id = strings.ReplaceAll(id, `\n`, "\n")
		}
		w.content = content
		data = append(data, content...)
		data = append(data, term...)
		want = append(want, w)
	}
	return data, want
}

// gotLines reads rows and rejects out of decoded batches, keyed by source offset.
type gotLines struct {
	rows    map[int64]string
	rejects map[int64][3]string // reason, raw, raw_bytes
}

func (g *gotLines) add(t *testing.T, d *Decoder) {
	t.Helper()
	b, r := d.Bronze, d.Rejects
	n := len(d.fields)
	for i := 0; i < b.Len(); i++ {
		off := b.Columns[n+3].Int64[i]
		if _, dup := g.rows[off]; dup {
			t.Fatalf("row at %d twice", off)
		}
		g.rows[off] = string(b.Columns[0].BytesAt(i))
	}
	for i := 0; i < r.Len(); i++ {
		off := r.Columns[6].Int64[i]
		if _, dup := g.rejects[off]; dup {
			t.Fatalf("reject at %d twice", off)
		}
		g.rejects[off] = [3]string{string(r.Columns[1].BytesAt(i)), string(r.Columns[3].BytesAt(i)), fmt.Sprint(r.Columns[4].Int64[i])}
	}
}

// check compares what was decoded with the generator's account of the lines.
func (g *gotLines) check(t *testing.T, want []wantLine, st ObjectStats) {
	t.Helper()
	var rows, rejects, blank int64
	for _, w := range want {
		switch {
		case w.blank:
			blank++
			if _, ok := g.rows[w.offset]; ok {
				t.Errorf("blank line at %d became a row", w.offset)
			}
			if _, ok := g.rejects[w.offset]; ok {
				t.Errorf("blank line at %d became a reject", w.offset)
			}
		case w.reason != "":
			rejects++
			got, ok := g.rejects[w.offset]
			if !ok {
				t.Errorf("line at %d: no reject, want %s", w.offset, w.reason)
				continue
			}
			if got[0] != w.reason || got[2] != fmt.Sprint(len(w.content)) {
				t.Errorf("line at %d: reject %s of %s bytes, want %s of %d", w.offset, got[0], got[2], w.reason, len(w.content))
			}
			if !strings.HasPrefix(w.content, got[1]) || len(got[1]) < min(len(w.content), blockTestLimits.MaxLineBytes) {
				t.Errorf("line at %d: raw text %.40q... (%d bytes) is not the line's start", w.offset, got[1], len(got[1]))
			}
		default:
			rows++
			if got, ok := g.rows[w.offset]; !ok || got != w.id {
				t.Errorf("line at %d: row %q (%v), want %q", w.offset, got, ok, w.id)
			}
		}
	}
	if int64(len(g.rows)) != rows || int64(len(g.rejects)) != rejects {
		t.Errorf("%d rows and %d rejects, want %d and %d", len(g.rows), len(g.rejects), rows, rejects)
	}
	if st.Rows != rows || st.Rejected != rejects || st.BlankLines != blank || st.Lines != rows+rejects {
		t.Errorf("stats %+v, want %d rows, %d rejected, %d blank", st, rows, rejects, blank)
	}
}

// TestBlocksMatchTheLines decodes random objects serially and through the block pipeline, with
// blocks from a few bytes to the default size, and checks every line against the generator's
// own account of it: each record a row at its byte offset, each bad line one reject with its
// reason, length and text, blank lines counted, nothing twice, nothing lost.
func TestBlocksMatchTheLines(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		data, want := genLines(rng, 20+rng.IntN(400), seed%3 == 0)
		gzipped := seed%4 == 0
		input, key := data, "landing/k.json"
		if gzipped {
			input, key = gz(t, data), "landing/k.json.gz"
		}
		for _, block := range []int{1, 7, 64, 301, 4096, 0} {
			for _, parallel := range []bool{false, true} {
				t.Run(fmt.Sprintf("seed=%d/block=%d/parallel=%v", seed, block, parallel), func(t *testing.T) {
					d, err := NewDecoder(declaredEvents(), blockTestLimits)
					if err != nil {
						t.Fatal(err)
					}
					d.blockBytes = block
					g := &gotLines{rows: map[int64]string{}, rejects: map[int64][3]string{}}
					if parallel {
						pool := &decoderPool{newDecoder: func() (*Decoder, error) { return NewDecoder(declaredEvents(), blockTestLimits) }}
						d.pipeline = &blockPipeline{depth: 3, pool: pool, write: func(_ context.Context, bd *Decoder) error {
							g.add(t, bd)
							return nil
						}}
					}
					st, err := d.Decode(context.Background(), bytes.NewReader(input), key, FormatJSON, 1)
					if err != nil {
						t.Fatal(err)
					}
					g.add(t, d)
					if st.Bytes != int64(len(data)) {
						t.Errorf("%d bytes counted, the object has %d", st.Bytes, len(data))
					}
					g.check(t, want, st)
				})
			}
		}
	}
}

// TestBlockPipelineKeepsObjectOrder checks that the pipeline writes the blocks in the object's
// order, whatever order they finish in: the rows of a batch, and so its data files, are the
// same on every run.
func TestBlockPipelineKeepsObjectOrder(t *testing.T) {
	var data []byte
	for i := 0; i < 5000; i++ {
		data = append(data, fmt.Sprintf(`{"event_id":"e%d","event_time":"2024-05-01T12:07:00Z"}`+"\n", i)...)
	}
	d, _ := NewDecoder(declaredEvents(), Limits{})
	d.blockBytes = 100
	var offsets []int64
	pool := &decoderPool{newDecoder: func() (*Decoder, error) { return NewDecoder(declaredEvents(), Limits{}) }}
	d.pipeline = &blockPipeline{depth: 8, pool: pool, write: func(_ context.Context, bd *Decoder) error {
		offsets = append(offsets, bd.Bronze.Columns[len(bd.fields)+3].Int64...)
		return nil
	}}
	st, err := d.Decode(context.Background(), bytes.NewReader(data), "k.json", FormatJSON, 1)
	if err != nil || st.Rows != 5000 {
		t.Fatalf("%+v %v", st, err)
	}
	if len(offsets) != 5000 {
		t.Fatalf("%d rows written", len(offsets))
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] <= offsets[i-1] {
			t.Fatalf("row %d at offset %d after %d: blocks written out of order", i, offsets[i], offsets[i-1])
		}
	}
}

// smallBlocks makes an ingester cut NDJSON objects into blocks of a few lines, so that the
// ingest tests' small objects go through the block pipeline as many blocks, as large ones do.
func smallBlocks(x *Ingester, err error) (*Ingester, error) {
	if x != nil {
		x.blockBytes = 61
	}
	return x, err
}

// TestBlockPipelineStreamErrors: a gzip object cut short and a gzip bomb end the same way
// through the pipeline as serially: the whole lines before the failure are rows, and one
// reject at the decompressed offset where reading stopped says why.
func TestBlockPipelineStreamErrors(t *testing.T) {
	var lines []byte
	for i := 0; i < 3000; i++ {
		lines = append(lines, fmt.Sprintf(`{"event_id":"e%d","event_time":"2024-05-01T12:07:00Z"}`+"\n", i)...)
	}
	full := gz(t, lines)
	for _, tc := range []struct {
		name   string
		data   []byte
		limits Limits
		reason string
	}{
		{"truncated", full[:len(full)/2], Limits{}, ReasonCorruptGzip},
		{"bomb", full, Limits{MaxDecompressedBytes: int64(len(lines) / 3)}, ReasonDecompressedSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decode := func(parallel bool) (ObjectStats, *gotLines) {
				d, _ := NewDecoder(declaredEvents(), tc.limits)
				d.blockBytes = 500
				g := &gotLines{rows: map[int64]string{}, rejects: map[int64][3]string{}}
				if parallel {
					pool := &decoderPool{newDecoder: func() (*Decoder, error) { return NewDecoder(declaredEvents(), tc.limits) }}
					d.pipeline = &blockPipeline{depth: 4, pool: pool, write: func(_ context.Context, bd *Decoder) error {
						g.add(t, bd)
						return nil
					}}
				}
				st, err := d.Decode(context.Background(), bytes.NewReader(tc.data), "k.json.gz", FormatJSON, 1)
				if err != nil {
					t.Fatal(err)
				}
				g.add(t, d)
				return st, g
			}
			serial, gs := decode(false)
			piped, gp := decode(true)
			if serial.ByReason[tc.reason] != 1 || serial.Rows == 0 || serial.Rows >= 3000 {
				t.Fatalf("serial: %+v", serial)
			}
			if fmt.Sprint(serial) != fmt.Sprint(piped) || fmt.Sprint(gs.rejects) != fmt.Sprint(gp.rejects) || len(gs.rows) != len(gp.rows) {
				t.Fatalf("serial %+v %v, pipelined %+v %v", serial, gs.rejects, piped, gp.rejects)
			}
			// The rows are whole lines: the reject is where the last row's line ends.
			var last int64
			for off := range gp.rows {
				last = max(last, off)
			}
			for off := range gp.rejects {
				if want := last + int64(bytes.IndexByte(lines[last:], '\n')+1); off != want {
					t.Fatalf("reject at %d, the last whole line ends at %d", off, want)
				}
			}
		})
	}
}

// TestIngestLargeObjectDefaultBlocks ingests one object of several default-size blocks, one
// object a commit, on a file lake: records of skewed sizes (most short, some of hundreds of KiB
// that fill a block and are still within the line limit, two over the limit by far), runs of
// blank lines and bad JSON. Every non-blank line is in bronze or rejects exactly once at its
// byte offset, as the test's own account of the object says, and the counts add up.
func TestIngestLargeObjectDefaultBlocks(t *testing.T) {
	ctx := context.Background()
	lake, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	key := "landing/events/big.json"
	var data []byte
	want := map[string]bool{}
	var rows, rejects, big, huge int64
	for i := 0; i < 15000; i++ {
		at := fmt.Sprintf("%s@%d", key, len(data))
		var line string
		switch k := rng.IntN(1000); {
		case k < 2: // hundreds of KiB: a block on its own, within the 1 MiB limit
			line = fmt.Sprintf(`{"event_id":"big-%d","event_type":"%s","event_time":"2024-05-01T12:07:00Z"}`, i, strings.Repeat("p", 300<<10+rng.IntN(600<<10)))
			rows++
			big++
		case k < 3 && i%2 == 0: // far over the limit
			line = fmt.Sprintf(`{"event_id":"huge-%d","event_type":"%s"}`, i, strings.Repeat("h", 1<<20+rng.IntN(2<<20)))
			rejects++
			huge++
		case k < 30:
			line = `{"event_id":` // bad JSON
			rejects++
		case k < 60:
			data = append(data, strings.Repeat(" \n", 1+rng.IntN(50))...)
			continue
		default:
			line = fmt.Sprintf(`{"event_id":"e-%d","amount":%d.5,"event_time":"2024-05-01T12:07:00Z"}`, i, rng.IntN(1000))
			rows++
		}
		want[at] = true
		data = append(data, line...)
		data = append(data, '\n')
	}
	if err := objstore.PutBytes(ctx, lake, key, data); err != nil {
		t.Fatal(err)
	}
	if len(data) < 8*blockBytes || big == 0 || huge == 0 {
		t.Fatalf("the object is %d bytes with %d lines of a block and %d over the limit: want several blocks and both kinds", len(data), big, huge)
	}
	opts := ingestOptions()
	opts.MaxFilesPerTrigger, opts.FlushRows = 1, 1<<16
	x, err := NewIngester(lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := x.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows != rows || rep.Rejected != rejects || rep.Bytes != int64(len(data)) {
		t.Fatalf("report %+v, want %d rows, %d rejected, %d bytes", rep, rows, rejects, len(data))
	}
	sameSet(t, tableLines(t, lake), want)
}

// TestIngestOneDecoderSlot: with a single block decoder for all workers (the bound a machine's
// cores set), three workers still get through a batch of several objects cut into many blocks:
// a worker's queued blocks hold their decoders only until it writes them, so no worker waits
// on another forever, and every line lands once.
func TestIngestOneDecoderSlot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lake := mem.New()
	rng := rand.New(rand.NewPCG(8, 9))
	want := map[string]bool{}
	for i := 0; i < 6; i++ {
		for k := range landingObject(t, lake, rng, fmt.Sprintf("landing/events/%03d.json", i), 200) {
			want[k] = true
		}
	}
	opts := ingestOptions()
	opts.MaxFilesPerTrigger, opts.Workers = 6, 3
	x, err := smallBlocks(NewIngester(lake, opts))
	if err != nil {
		t.Fatal(err)
	}
	x.blocks.slots = make(chan struct{}, 1)
	rep, err := x.Run(ctx)
	if err != nil || rep.Lines != int64(len(want)) {
		t.Fatalf("%+v %v", rep, err)
	}
	sameSet(t, tableLines(t, lake), want)
}
