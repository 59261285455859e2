package deploy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/config"
)

// configKeys walks the config structs' yaml tags: every leaf key path a user can write.
func configKeys(t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name := strings.Split(tag, ",")[0]
		if tag == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(tag, ",inline") {
			configKeys(f.Type, prefix, out)
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		// Structs of the config package with yaml-tagged fields are sections; the others
		// (durations, sizes, types, triggers) are values.
		section := ft.Kind() == reflect.Struct && ft.PkgPath() == reflect.TypeOf(config.Pipeline{}).PkgPath() && hasYAMLFields(ft)
		if section {
			configKeys(ft, prefix+name+".", out)
		} else {
			*out = append(*out, prefix+name)
		}
	}
}

func hasYAMLFields(t reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		if tag := t.Field(i).Tag.Get("yaml"); tag != "" && tag != "-" {
			return true
		}
	}
	return false
}

// TestREADMEDocumentsEveryConfigKey keeps the config reference honest: a key added to the config
// must be added to the reference table in docs/config.md (the README links it; the `joins` keys
// are in docs/joins.md, which the reference links), and the example config must mention it too.
func TestREADMEDocumentsEveryConfigKey(t *testing.T) {
	var readme []byte
	for _, page := range []string{"config.md", "joins.md"} {
		data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", page))
		if err != nil {
			t.Fatal(err)
		}
		readme = append(readme, data...)
	}
	example, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	configKeys(reflect.TypeOf(config.Pipeline{}), "", &keys)
	if len(keys) < 40 {
		t.Fatalf("found only %d config keys: the walk is broken", len(keys))
	}
	for _, k := range keys {
		// A source of sources: takes the top-level source's keys (docs/config.md says so under
		// "Several sources"): sources.<key> is documented when <key> is, and the sources row is.
		if rest, ok := strings.CutPrefix(k, "sources."); ok && rest != "name" {
			if !strings.Contains(string(readme), "`"+rest+"`") || !strings.Contains(string(readme), "`sources`") {
				t.Errorf("docs/config.md and docs/joins.md document neither `%s` nor `sources`", rest)
			}
			continue
		}
		if !strings.Contains(string(readme), "`"+k+"`") {
			t.Errorf("docs/config.md (and docs/joins.md) config reference lacks `%s`", k)
		}
		leaf := k[strings.LastIndex(k, ".")+1:]
		if !strings.Contains(string(example), leaf+":") {
			t.Errorf("examples/pipeline.yaml never shows %s", k)
		}
	}
}
