package objstore_test

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"a/b/c.json", true},
		{"_delta_log/00000000000000000000.json", true},
		{"a..b/.c/..d", true},
		{"日本/語", true},
		{"", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{".", false},
		{"..", false},
		{"a/./b", false},
		{"a/../b", false},
		{"a\x00b", false},
	}
	for _, tc := range tests {
		err := objstore.ValidateKey(tc.key)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateKey(%q) = %v, want ok=%v", tc.key, err, tc.ok)
		}
		if err != nil && !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, not ErrInvalidKey", tc.key, err)
		}
	}
}

// FuzzValidateKey checks the promise backends rely on: a valid key, joined under any root, stays
// under that root and names the same path after cleaning.
func FuzzValidateKey(f *testing.F) {
	for _, seed := range []string{"a/b", "../a", "a/../../b", "/x", "a//b", "a/.", "x\x00", "....", "a/..b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if objstore.ValidateKey(key) != nil {
			return
		}
		joined := path.Join("/root", key)
		if !strings.HasPrefix(joined, "/root/") || joined != "/root/"+key {
			t.Errorf("valid key %q joins to %q", key, joined)
		}
		if objstore.ValidatePrefix(key) != nil {
			t.Errorf("valid key %q is not a valid prefix", key)
		}
	})
}
