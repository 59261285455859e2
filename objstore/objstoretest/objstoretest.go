// Package objstoretest is the acceptance suite every objstore.Bucket must pass: one behavioural
// contract (not-found errors, round trips, ranges, listing order, put-if-absent with exactly one
// winner, ...) run against mem, file, the prefix decorator and S3 (a real MinIO server).
//
// The expected values are computed here from first principles (sorted key lists, sliced byte
// arrays, SHA-256 of generated content), never read back from another backend. The suite keeps no
// state between runs: each subtest asks Config.New for a fresh, empty bucket.
package objstoretest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
)

// Config describes the backend under test.
type Config struct {
	// New returns a fresh, empty bucket; cleanup goes through t.Cleanup.
	New func(t *testing.T) objstore.Bucket
}

// HugeSize is the size of the large-object test (64 MiB). It is skipped only with -short.
const HugeSize = 64 << 20

// RunBucketTests runs the whole acceptance suite as subtests of t.
func RunBucketTests(t *testing.T, cfg Config) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, objstore.Bucket)
	}{
		{"NotFound", testNotFound},
		{"RoundTrip", testRoundTrip},
		{"UnknownSize", testUnknownSize},
		{"Huge", testHuge},
		{"Ranges", testRanges},
		{"ReaderAt", testReaderAt},
		{"List", testList},
		{"ListEarlyStop", testListEarlyStop},
		{"Delete", testDelete},
		{"InvalidKeys", testInvalidKeys},
		{"Overwrite", testOverwrite},
		{"ConcurrentPut", testConcurrentPut},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentRace", testPutIfAbsentRace},
		{"CanceledContext", testCanceledContext},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, cfg.New(t))
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// chacha returns a fast deterministic byte stream for seed.
func chacha(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return rand.NewChaCha8(s)
}

// payload returns n deterministic, non-repeating bytes, different per seed.
func payload(seed uint64, n int) []byte {
	b := make([]byte, n)
	_, _ = chacha(seed).Read(b)
	return b
}

func put(t *testing.T, b objstore.Bucket, key string, data []byte) {
	t.Helper()
	if err := objstore.PutBytes(ctxFor(t), b, key, data); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func mustGet(t *testing.T, b objstore.Bucket, key string) []byte {
	t.Helper()
	data, err := objstore.ReadAll(ctxFor(t), b, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return data
}

func readRange(ctx context.Context, b objstore.Bucket, key string, off, n int64) ([]byte, error) {
	rc, err := b.GetRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func testNotFound(t *testing.T, b objstore.Bucket) {
	ctx := ctxFor(t)
	put(t, b, "dir/present", []byte("x"))
	for _, key := range []string{"missing", "dir/missing", "dir", "dir/present/child", "nodir/a/b"} {
		if _, err := b.Get(ctx, key); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", key, err)
		}
		if _, err := b.GetRange(ctx, key, 0, 1); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("GetRange(%q) = %v, want ErrNotFound", key, err)
		}
		if _, err := b.Stat(ctx, key); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("Stat(%q) = %v, want ErrNotFound", key, err)
		}
	}
}

func testRoundTrip(t *testing.T, b objstore.Bucket) {
	ctx := ctxFor(t)
	sizes := []int{0, 1, 1023, 1 << 10, 1<<20 + 3}
	before := time.Now()
	for i, size := range sizes {
		key := fmt.Sprintf("rt/%d/obj-%d.bin", i, size)
		want := payload(uint64(i+1), size)
		put(t, b, key, want)
		if got := mustGet(t, b, key); !bytes.Equal(got, want) {
			t.Errorf("Get(%q): %d bytes differ from the %d put", key, len(got), len(want))
		}
		info, err := b.Stat(ctx, key)
		if err != nil {
			t.Fatalf("Stat(%q): %v", key, err)
		}
		if info.Key != key || info.Size != int64(size) {
			t.Errorf("Stat(%q) = key %q size %d, want size %d", key, info.Key, info.Size, size)
		}
		// Stores keep seconds at best; a minute of slack allows for that and a clock step.
		if info.ModTime.Before(before.Add(-time.Minute)) || info.ModTime.After(time.Now().Add(time.Minute)) {
			t.Errorf("Stat(%q).ModTime = %v, want about %v", key, info.ModTime, before)
		}
	}
}

func testUnknownSize(t *testing.T, b objstore.Bucket) {
	ctx := ctxFor(t)
	for i, size := range []int{0, 5, 3<<20 + 7} {
		want := payload(uint64(100+i), size)
		key := fmt.Sprintf("unknown/%d", size)
		// A reader that hides its length, as a pipe from a compressor would.
		r := io.MultiReader(bytes.NewReader(want))
		if err := b.Put(ctx, key, r, -1); err != nil {
			t.Fatalf("Put(%q, size -1): %v", key, err)
		}
		if got := mustGet(t, b, key); !bytes.Equal(got, want) {
			t.Errorf("Get(%q) = %d bytes, want the %d put", key, len(got), len(want))
		}
		r = io.MultiReader(bytes.NewReader(want))
		if err := b.PutIfAbsent(ctx, key+"-ifabsent", r, -1); err != nil {
			t.Fatalf("PutIfAbsent(%q, size -1): %v", key, err)
		}
		if got := mustGet(t, b, key+"-ifabsent"); !bytes.Equal(got, want) {
			t.Errorf("Get(%q) = %d bytes, want the %d put", key+"-ifabsent", len(got), len(want))
		}
	}
}

// newGen streams size deterministic bytes without holding them all; it hides any Seek, as a
// pipe from an encoder would.
func newGen(size int64) io.Reader {
	return io.LimitReader(chacha(7), size)
}

func testHuge(t *testing.T, b objstore.Bucket) {
	if testing.Short() {
		t.Skip("64 MiB object skipped with -short")
	}
	ctx := ctxFor(t)
	want := sha256.New()
	if _, err := io.Copy(want, newGen(HugeSize)); err != nil {
		t.Fatal(err)
	}
	const key = "huge/object.bin"
	if err := b.Put(ctx, key, newGen(HugeSize), HugeSize); err != nil {
		t.Fatalf("Put 64 MiB: %v", err)
	}
	info, err := b.Stat(ctx, key)
	if err != nil || info.Size != HugeSize {
		t.Fatalf("Stat = %+v, %v; want size %d", info, err, HugeSize)
	}
	rc, err := b.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, rc)
	rc.Close()
	if err != nil || n != HugeSize {
		t.Fatalf("Get read %d bytes, err %v; want %d", n, err, HugeSize)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatal("64 MiB object content differs")
	}
	tail, err := readRange(ctx, b, key, HugeSize-10, -1)
	if err != nil || len(tail) != 10 {
		t.Fatalf("tail range = %d bytes, %v; want 10", len(tail), err)
	}
}

func testRanges(t *testing.T, b objstore.Bucket) {
	ctx := ctxFor(t)
	data := payload(42, 100)
	put(t, b, "ranges/obj", data)
	put(t, b, "ranges/empty", nil)
	tests := []struct {
		key         string
		off, length int64
		want        []byte
	}{
		{"ranges/obj", 0, -1, data},
		{"ranges/obj", 0, 100, data},
		{"ranges/obj", 0, 1, data[:1]},
		{"ranges/obj", 10, 20, data[10:30]},
		{"ranges/obj", 99, 1, data[99:]},
		{"ranges/obj", 50, -1, data[50:]},
		{"ranges/obj", 90, 1000, data[90:]}, // runs past the end: cut
		{"ranges/obj", 0, 0, nil},
		{"ranges/obj", 100, -1, nil}, // offset at the end
		{"ranges/obj", 100, 5, nil},
		{"ranges/obj", 150, 5, nil}, // offset past the end
		{"ranges/obj", 150, -1, nil},
		{"ranges/empty", 0, -1, nil},
		{"ranges/empty", 0, 10, nil},
		{"ranges/empty", 3, 1, nil},
	}
	for _, tc := range tests {
		got, err := readRange(ctx, b, tc.key, tc.off, tc.length)
		if err != nil {
			t.Errorf("GetRange(%q, %d, %d): %v", tc.key, tc.off, tc.length, err)
			continue
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("GetRange(%q, %d, %d) = %d bytes, want %d", tc.key, tc.off, tc.length, len(got), len(tc.want))
		}
	}
	if _, err := b.GetRange(ctx, "ranges/obj", -1, 5); err == nil {
		t.Error("GetRange with a negative offset: no error")
	}
}

func testReaderAt(t *testing.T, b objstore.Bucket) {
	ctx := ctxFor(t)
	data := payload(9, 4096)
	put(t, b, "readerat/obj", data)
	ra := objstore.NewReaderAt(ctx, b, "readerat/obj", int64(len(data)))
	buf := make([]byte, 100)
	n, err := ra.ReadAt(buf, 1000)
	if err != nil || n != 100 || !bytes.Equal(buf, data[1000:1100]) {
		t.Errorf("ReadAt(100@1000) = %d, %v", n, err)
	}
	n, err = ra.ReadAt(buf, 4050)
	if err != io.EOF || n != 46 || !bytes.Equal(buf[:n], data[4050:]) {
		t.Errorf("ReadAt(100@4050) = %d, %v; want 46, EOF", n, err)
	}
}

func listKeys(t *testing.T, b objstore.Bucket, prefix, startAfter string) []string {
	t.Helper()
	infos, err := objstore.ListAll(ctxFor(t), b, prefix, objstore.ListOptions{StartAfter: startAfter})
	if err != nil {
		t.Fatalf("List(%q, %q): %v", prefix, startAfter, err)
	}
	keys := []string{}
	for _, info := range infos {
		keys = append(keys, info.Key)
	}
	return keys
}

func testList(t *testing.T, b objstore.Bucket) {
	// "a-b" < "a/b" < "a0" in byte order, while a sorted directory walk would put "a/..." first.
	keys := []string{
		"a-b", "a/b", "a/c/d", "a/c-e", "a/c/e", "a0", "ab", "b/x/y/z", "b/x0", "_delta_log/00000000000000000000.json",
		"_delta_log/00000000000000000001.json", "_delta_log/00000000000000000001.checkpoint.parquet",
		"_delta_log/00000000000000000010.json", "_delta_log/_last_checkpoint", "z", "Z", "日本/語",
	}
	sizes := map[string]int64{}
	for i, k := range keys {
		data := payload(uint64(i), i*3)
		put(t, b, k, data)
		sizes[k] = int64(len(data))
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	oracle := func(prefix, startAfter string) []string {
		out := []string{}
		for _, k := range sorted {
			if strings.HasPrefix(k, prefix) && k > startAfter {
				out = append(out, k)
			}
		}
		return out
	}

	infos, err := objstore.ListAll(ctxFor(t), b, "", objstore.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Size != sizes[info.Key] {
			t.Errorf("List: %q size %d, want %d", info.Key, info.Size, sizes[info.Key])
		}
		if info.ModTime.IsZero() {
			t.Errorf("List: %q has no ModTime", info.Key)
		}
	}

	prefixes := []string{"", "a", "a/", "a/c", "a/c/", "a/c/d", "b/x", "_delta_log/", "_delta_log/0000000000000000000", "nothing", "nothing/", "日本/", "a-b/", "a0/x", "z/"}
	// Start keys present and absent, between keys, inside a folder, and prefixes of keys (how
	// a log read starts after a version: "_delta_log/%020d" sorts before all of its files).
	starts := append([]string{"", "a", "a-", "a/", "a/c", "a/c-", "a/c/", "a0", "b", "_delta_log/", "_delta_log/00000000000000000001",
		"_delta_log/00000000000000000001.json", "_delta_log/00000000000000000005.json", "_delta_log/00000000000000000010.json",
		"_delta_log/_", "zz", "\xff"}, keys...)
	for _, p := range prefixes {
		for _, s := range starts {
			got := listKeys(t, b, p, s)
			if want := oracle(p, s); !slices.Equal(got, want) {
				t.Errorf("List(prefix %q, StartAfter %q) =\n  %q\nwant\n  %q", p, s, got, want)
			}
		}
	}
}

func testListEarlyStop(t *testing.T, b objstore.Bucket) {
	for i := range 5 {
		put(t, b, fmt.Sprintf("stop/%d", i), []byte{byte(i)})
	}
	var got []string
	for info, err := range b.List(ctxFor(t), "stop/", objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, info.Key)
		if len(got) == 2 {
			break
		}
	}
	if !slices.Equal(got, []string{"stop/0", "stop/1"}) {
		t.Errorf("early-stopped List = %q", got)
	}
}

func testDelete(t *testing.T, b objstore.Bucket) {
	ctx := ctxFor(t)
	put(t, b, "del/a/b", []byte("x"))
	put(t, b, "del/keep", []byte("y"))
	for range 2 { // the second Delete is of a missing key
		if err := b.Delete(ctx, "del/a/b"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if err := b.Delete(ctx, "del/never/existed"); err != nil {
		t.Errorf("Delete of a never-written key: %v", err)
	}
	if _, err := b.Stat(ctx, "del/a/b"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("Stat after Delete = %v, want ErrNotFound", err)
	}
	if got := listKeys(t, b, "del/", ""); !slices.Equal(got, []string{"del/keep"}) {
		t.Errorf("List after Delete = %q", got)
	}
	// Once "del/a/b" is gone, "del/a" is free to be an object itself.
	put(t, b, "del/a", []byte("z"))
	if got := mustGet(t, b, "del/a"); string(got) != "z" {
		t.Errorf("Get(del/a) = %q", got)
	}
}

func testInvalidKeys(t *testing.T, b objstore.Bucket) {
	ctx := ctxFor(t)
	bad := []string{"", "/abs", "/", "../x", "a/../b", "a/..", "..", ".", "./a", "a/.", "a//b", "a/", "a\x00b"}
	for _, key := range bad {
		checks := map[string]error{}
		_, checks["Get"] = b.Get(ctx, key)
		_, checks["GetRange"] = b.GetRange(ctx, key, 0, 1)
		_, checks["Stat"] = b.Stat(ctx, key)
		checks["Put"] = objstore.PutBytes(ctx, b, key, []byte("x"))
		checks["PutIfAbsent"] = objstore.PutBytesIfAbsent(ctx, b, key, []byte("x"))
		checks["Delete"] = b.Delete(ctx, key)
		for op, err := range checks {
			if !errors.Is(err, objstore.ErrInvalidKey) {
				t.Errorf("%s(%q) = %v, want ErrInvalidKey", op, key, err)
			}
		}
	}
	for _, prefix := range []string{"/", "../", "a//", "/a", "a/../"} {
		_, err := objstore.ListAll(ctx, b, prefix, objstore.ListOptions{})
		if !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("List(%q) = %v, want ErrInvalidKey", prefix, err)
		}
	}
	if got := listKeys(t, b, "", ""); len(got) != 0 {
		t.Errorf("invalid keys left objects behind: %q", got)
	}
}

func testOverwrite(t *testing.T, b objstore.Bucket) {
	ctx := ctxFor(t)
	put(t, b, "ow/key", payload(1, 1000))
	want := payload(2, 10)
	put(t, b, "ow/key", want)
	if got := mustGet(t, b, "ow/key"); !bytes.Equal(got, want) {
		t.Errorf("after overwrite Get = %d bytes, want the 10 of the second Put", len(got))
	}
	if info, err := b.Stat(ctx, "ow/key"); err != nil || info.Size != 10 {
		t.Errorf("after overwrite Stat = %+v, %v", info, err)
	}
}

// testConcurrentPut checks atomicity under overwrite races: the survivor is one writer's
// content in full, never a mix or a prefix.
func testConcurrentPut(t *testing.T, b objstore.Bucket) {
	const writers = 8
	contents := make([][]byte, writers)
	for i := range contents {
		contents[i] = payload(uint64(500+i), 64<<10)
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { errs[i] = objstore.PutBytes(ctxFor(t), b, "cput/key", contents[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	got := mustGet(t, b, "cput/key")
	if !slices.ContainsFunc(contents, func(c []byte) bool { return bytes.Equal(c, got) }) {
		t.Errorf("concurrent Puts left %d bytes matching no writer", len(got))
	}
}

func testPutIfAbsent(t *testing.T, b objstore.Bucket) {
	ctx := ctxFor(t)
	first := []byte("first")
	if err := objstore.PutBytesIfAbsent(ctx, b, "pia/key", first); err != nil {
		t.Fatalf("first PutIfAbsent: %v", err)
	}
	err := objstore.PutBytesIfAbsent(ctx, b, "pia/key", []byte("second"))
	if !errors.Is(err, objstore.ErrAlreadyExists) {
		t.Fatalf("second PutIfAbsent = %v, want ErrAlreadyExists", err)
	}
	if got := mustGet(t, b, "pia/key"); !bytes.Equal(got, first) {
		t.Errorf("content after lost PutIfAbsent = %q, want %q", got, first)
	}
	put(t, b, "pia/plain", []byte("plain"))
	if err := objstore.PutBytesIfAbsent(ctx, b, "pia/plain", []byte("x")); !errors.Is(err, objstore.ErrAlreadyExists) {
		t.Errorf("PutIfAbsent over a Put object = %v, want ErrAlreadyExists", err)
	}
	if err := b.Delete(ctx, "pia/key"); err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytesIfAbsent(ctx, b, "pia/key", []byte("again")); err != nil {
		t.Errorf("PutIfAbsent after Delete: %v", err)
	}
	if got := mustGet(t, b, "pia/key"); string(got) != "again" {
		t.Errorf("content = %q, want again", got)
	}
}

func testPutIfAbsentRace(t *testing.T, b objstore.Bucket) {
	const racers = 16
	const key = "_delta_log/00000000000000000007.json"
	start := make(chan struct{})
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			body := fmt.Sprintf(`{"commitInfo":{"writer":%d}}`, i)
			errs[i] = objstore.PutBytesIfAbsent(ctxFor(t), b, key, []byte(body))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Errorf("writers %d and %d both won", winner, i)
			}
			winner = i
		case !errors.Is(err, objstore.ErrAlreadyExists):
			t.Errorf("writer %d: %v, want nil or ErrAlreadyExists", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	want := fmt.Sprintf(`{"commitInfo":{"writer":%d}}`, winner)
	if got := mustGet(t, b, key); string(got) != want {
		t.Errorf("stored %q, want the winner's %q", got, want)
	}
}

func testCanceledContext(t *testing.T, b objstore.Bucket) {
	put(t, b, "cancel/present", []byte("x"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Get(ctx, "cancel/present"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a canceled context = %v, want context.Canceled", err)
	}
	if err := objstore.PutBytes(ctx, b, "cancel/new", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a canceled context = %v, want context.Canceled", err)
	}
	if _, err := b.Stat(ctxFor(t), "cancel/new"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("a Put under a canceled context stored the object (Stat = %v)", err)
	}
	_, err := objstore.ListAll(ctx, b, "", objstore.ListOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("List with a canceled context = %v, want context.Canceled", err)
	}
}

// testClose closes a bucket that was used: whoever opens a bucket closes it, without an error.
func testClose(t *testing.T, b objstore.Bucket) {
	put(t, b, "close/a", []byte("a"))
	mustGet(t, b, "close/a")
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
