package stream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table/source"
)

// ErrBadCheckpoint reports a checkpoint file that cannot be read: the stream stops rather than
// guess, because guessing could count rows twice.
var ErrBadCheckpoint = errors.New("stream: bad checkpoint")

// offsetEntry is offsets/N: what batch N reads and the watermark and time it runs with.
type offsetEntry struct {
	BatchWatermarkMs int64
	BatchTimestampMs int64
	Conf             map[string]string
	// End is the source offset the batch reads up to (inclusive); nil when the source was empty.
	End *source.Offset
}

type offsetMeta struct {
	BatchWatermarkMs int64             `json:"batchWatermarkMs"`
	BatchTimestampMs int64             `json:"batchTimestampMs"`
	Conf             map[string]string `json:"conf"`
}

func (e *offsetEntry) marshal() []byte {
	var b bytes.Buffer
	b.WriteString("v1\n")
	m, _ := json.Marshal(offsetMeta{e.BatchWatermarkMs, e.BatchTimestampMs, e.Conf})
	b.Write(m)
	b.WriteByte('\n')
	if e.End == nil {
		b.WriteString("-")
	} else {
		b.WriteString(e.End.String())
	}
	return b.Bytes()
}

func parseOffsetEntry(key string, data []byte) (*offsetEntry, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "v1" {
		return nil, fmt.Errorf("%w: %s: want 3 lines starting with v1", ErrBadCheckpoint, key)
	}
	var m offsetMeta
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		return nil, fmt.Errorf("%w: %s line 2: %v", ErrBadCheckpoint, key, err)
	}
	e := &offsetEntry{BatchWatermarkMs: m.BatchWatermarkMs, BatchTimestampMs: m.BatchTimestampMs, Conf: m.Conf}
	if lines[2] != "-" {
		var o source.Offset
		if err := json.Unmarshal([]byte(lines[2]), &o); err != nil {
			return nil, fmt.Errorf("%w: %s line 3: %v", ErrBadCheckpoint, key, err)
		}
		e.End = &o
	}
	return e, nil
}

type commitEntry struct {
	NextBatchWatermarkMs int64 `json:"nextBatchWatermarkMs"`
}

func parseCommit(key string, data []byte) (commitEntry, error) {
	var c commitEntry
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "v1" {
		return c, fmt.Errorf("%w: %s: want 2 lines starting with v1", ErrBadCheckpoint, key)
	}
	if err := json.Unmarshal([]byte(lines[1]), &c); err != nil {
		return c, fmt.Errorf("%w: %s line 2: %v", ErrBadCheckpoint, key, err)
	}
	return c, nil
}

// checkpoint is the stream's folder of logs.
type checkpoint struct {
	b objstore.Bucket // rooted at the checkpoint folder
}

func offsetsKey(n int64) string  { return "offsets/" + strconv.FormatInt(n, 10) }
func commitsKey(n int64) string  { return "commits/" + strconv.FormatInt(n, 10) }
func stateKey(n int64) string    { return "state/" + strconv.FormatInt(n, 10) }
func progressKey(n int64) string { return "progress/" + strconv.FormatInt(n, 10) + ".json" }

// queryID reads metadata, creating it once (put-if-absent: two first runs agree on one id).
func (c *checkpoint) queryID(ctx context.Context) (string, error) {
	for range 3 {
		data, err := objstore.ReadAll(ctx, c.b, "metadata")
		if err == nil {
			var m struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(data, &m); err != nil || m.ID == "" {
				return "", fmt.Errorf("%w: metadata: no query id (%v)", ErrBadCheckpoint, err)
			}
			return m.ID, nil
		}
		if !errors.Is(err, objstore.ErrNotFound) {
			return "", fmt.Errorf("stream: read checkpoint metadata: %w", err)
		}
		m, _ := json.Marshal(map[string]string{"id": uuid.NewString()})
		if err := objstore.PutBytesIfAbsent(ctx, c.b, "metadata", m); err != nil && !errors.Is(err, objstore.ErrAlreadyExists) {
			return "", fmt.Errorf("stream: create checkpoint metadata: %w", err)
		}
	}
	return "", fmt.Errorf("%w: metadata cannot be created", ErrBadCheckpoint)
}

// latest returns the highest batch number under dir ("offsets" or "commits"), or -1.
func (c *checkpoint) latest(ctx context.Context, dir string) (int64, error) {
	n := int64(-1)
	for info, err := range c.b.List(ctx, dir+"/", objstore.ListOptions{}) {
		if err != nil {
			return 0, fmt.Errorf("stream: list checkpoint %s: %w", dir, err)
		}
		name := path.Base(info.Key)
		v, err := strconv.ParseInt(name, 10, 64)
		if err != nil || v < 0 {
			continue // Spark ignores foreign files (e.g. .crc) in its logs too
		}
		n = max(n, v)
	}
	return n, nil
}

func (c *checkpoint) readOffsets(ctx context.Context, n int64) (*offsetEntry, error) {
	key := offsetsKey(n)
	data, err := objstore.ReadAll(ctx, c.b, key)
	if err != nil {
		return nil, fmt.Errorf("stream: read checkpoint %s: %w", key, err)
	}
	return parseOffsetEntry(key, data)
}

func (c *checkpoint) readCommit(ctx context.Context, n int64) (commitEntry, error) {
	key := commitsKey(n)
	data, err := objstore.ReadAll(ctx, c.b, key)
	if err != nil {
		return commitEntry{}, fmt.Errorf("stream: read checkpoint %s: %w", key, err)
	}
	return parseCommit(key, data)
}

// writeOffsets writes the WAL entry of batch n. If another run wrote it first, the existing
// entry wins and is returned: a batch runs with exactly what its WAL says.
func (c *checkpoint) writeOffsets(ctx context.Context, n int64, e *offsetEntry) (*offsetEntry, error) {
	err := objstore.PutBytesIfAbsent(ctx, c.b, offsetsKey(n), e.marshal())
	if err == nil {
		return e, nil
	}
	if !errors.Is(err, objstore.ErrAlreadyExists) {
		// The write may have landed (an unknown outcome): read it back before deciding.
		if got, rerr := c.readOffsets(ctx, n); rerr == nil {
			return got, nil
		}
		return nil, fmt.Errorf("stream: write checkpoint %s: %w", offsetsKey(n), err)
	}
	return c.readOffsets(ctx, n)
}

func (c *checkpoint) writeCommit(ctx context.Context, n, nextWM int64) error {
	m, _ := json.Marshal(commitEntry{NextBatchWatermarkMs: nextWM})
	data := append([]byte("v1\n"), m...)
	if err := objstore.PutBytesIfAbsent(ctx, c.b, commitsKey(n), data); err != nil && !errors.Is(err, objstore.ErrAlreadyExists) {
		return fmt.Errorf("stream: write checkpoint %s: %w", commitsKey(n), err)
	}
	return nil
}

// cleanup removes the files of batch n (and state version n) once they fall out of the
// retention. A crash between deletes leaves files behind that nothing reads.
func (c *checkpoint) cleanup(ctx context.Context, n int64) error {
	for _, key := range []string{offsetsKey(n), commitsKey(n), stateKey(n), progressKey(n)} {
		if err := c.b.Delete(ctx, key); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return fmt.Errorf("stream: clean up checkpoint %s: %w", key, err)
		}
	}
	return nil
}

// State files hold named sections (the dedup state, each aggregation's snapshot) with a
// version and a CRC-32, so a torn or foreign file fails loudly.
const stateMagic = "MDLSTRM1"

func encodeState(sections map[string][]byte, order []string) []byte {
	size := len(stateMagic) + binary.MaxVarintLen64 + 4
	for _, name := range order {
		size += 2*binary.MaxVarintLen64 + len(name) + len(sections[name])
	}
	// Sized once: a full snapshot section can be hundreds of megabytes.
	dst := append(make([]byte, 0, size), stateMagic...)
	dst = binary.AppendUvarint(dst, uint64(len(order)))
	for _, name := range order {
		dst = binary.AppendUvarint(dst, uint64(len(name)))
		dst = append(dst, name...)
		dst = binary.AppendUvarint(dst, uint64(len(sections[name])))
		dst = append(dst, sections[name]...)
	}
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst))
}

func decodeState(key string, b []byte) (map[string][]byte, error) {
	bad := func(what string) error { return fmt.Errorf("%w: %s: %s", ErrBadCheckpoint, key, what) }
	if len(b) < len(stateMagic)+4 || string(b[:len(stateMagic)]) != stateMagic {
		return nil, bad("not a state file")
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, bad("checksum mismatch")
	}
	r := bufio.NewReader(bytes.NewReader(body[len(stateMagic):]))
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, bad("section count")
	}
	out := map[string][]byte{}
	read := func() ([]byte, error) {
		l, err := binary.ReadUvarint(r)
		if err != nil || l > uint64(len(body)) {
			return nil, bad("section length")
		}
		p := make([]byte, l)
		if _, err := io.ReadFull(r, p); err != nil {
			return nil, bad("truncated section")
		}
		return p, nil
	}
	for range n {
		name, err := read()
		if err != nil {
			return nil, err
		}
		data, err := read()
		if err != nil {
			return nil, err
		}
		out[string(name)] = data
	}
	return out, nil
}

func encodeIdle(lastDataMs, baseWM int64) []byte {
	return binary.AppendVarint(binary.AppendVarint(nil, lastDataMs), baseWM)
}

func decodeIdle(b []byte) (lastDataMs, baseWM int64, err error) {
	lastDataMs, n := binary.Varint(b)
	if n <= 0 {
		return 0, 0, errors.New("bad idle section")
	}
	baseWM, m := binary.Varint(b[n:])
	if m <= 0 || n+m != len(b) {
		return 0, 0, errors.New("bad idle section")
	}
	return lastDataMs, baseWM, nil
}
