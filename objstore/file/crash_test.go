package file_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
)

const crashEnv = "MEDALLION_FILE_CRASH_ROOT"

// version returns the full content of generation g: 4 MiB so a kill often lands mid-write.
func version(g int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("gen-%08d|", g)), (4<<20)/13)
}

// TestMain turns the test binary into the victim process of TestCrashDuringPut when asked.
func TestMain(m *testing.M) {
	if root := os.Getenv(crashEnv); root != "" {
		first, _ := strconv.Atoi(os.Getenv(crashEnv + "_FIRST"))
		if err := crashVictim(root, first); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// crashVictim overwrites one key and creates new log entries in a loop until it is killed.
func crashVictim(root string, first int) error {
	b, err := file.New(root)
	if err != nil {
		return err
	}
	ctx := context.Background()
	for g := first; ; g++ {
		if err := objstore.PutBytes(ctx, b, "data/current", version(g)); err != nil {
			return err
		}
		key := fmt.Sprintf("_delta_log/%020d.json", g)
		if err := objstore.PutBytesIfAbsent(ctx, b, key, version(g)); err != nil {
			return err
		}
	}
}

// TestCrashDuringPut kills a writer with SIGKILL at random moments and checks what a crash may
// leave: every visible object is one complete version, temp files are never listed, and the
// bucket keeps working.
func TestCrashDuringPut(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	root := t.TempDir()
	for round := range 4 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), crashEnv+"="+root, fmt.Sprintf("%s_FIRST=%d", crashEnv, 1+round*1_000_000))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill only after the victim made progress (it starts slowly under -race), then at a
		// moment that varies per round relative to its write loop.
		logDir := filepath.Join(root, "_delta_log")
		deadline := time.Now().Add(30 * time.Second)
		for {
			entries, _ := os.ReadDir(logDir)
			if len(entries) > round || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Duration(round*17) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()

		b, err := file.New(root)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		infos, err := objstore.ListAll(ctx, b, "", objstore.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			data, err := objstore.ReadAll(ctx, b, info.Key)
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, info.Key, err)
			}
			g, err := strconv.Atoi(string(data[4:12]))
			if err != nil || !bytes.Equal(data, version(g)) {
				t.Fatalf("round %d: %s holds %d bytes that are no complete version", round, info.Key, len(data))
			}
			if strings.HasPrefix(info.Key, ".objstore-tmp") {
				t.Fatalf("round %d: temp file listed: %s", round, info.Key)
			}
		}
		logs, err := objstore.ListAll(ctx, b, "_delta_log/", objstore.ListOptions{})
		if err != nil || len(logs) <= round {
			t.Fatalf("round %d: %d log entries (%v): the victim made no progress", round, len(logs), err)
		}
		// A surviving log entry is never replaced by a later put-if-absent.
		if err := objstore.PutBytesIfAbsent(ctx, b, logs[0].Key, []byte("x")); !errors.Is(err, objstore.ErrAlreadyExists) {
			t.Errorf("round %d: put-if-absent over %s = %v", round, logs[0].Key, err)
		}
		b.Close()
	}
}
