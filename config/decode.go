package config

import (
	"errors"
	"fmt"
	"iter"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/medallion-lake/medallion/internal/textdist"
)

// secretKeys are keys a user may try to put in the s3 block; each names its variable.
var secretKeys = map[string]string{
	"access_key_id":     "AWS_ACCESS_KEY_ID",
	"access_key":        "AWS_ACCESS_KEY_ID",
	"secret_access_key": "AWS_SECRET_ACCESS_KEY",
	"secret_key":        "AWS_SECRET_ACCESS_KEY",
	"session_token":     "AWS_SESSION_TOKEN",
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// decoder walks the YAML tree against the Go types before decoding, because yaml.v3's own
// strict mode names neither the parent path nor a likely intended key.
type decoder struct {
	source   string
	lines    map[string]int
	badLines map[int]bool // lines already reported, so yaml.v3's type errors there are dropped
	errs     []error
	visits   int                 // values walked, aliases expanded: bounded against alias bombs
	merging  map[*yaml.Node]bool // mappings being merged in, against "<<" cycles
}

// maxErrors bounds the problems reported for one file; the rest are counted.
const maxErrors = 50

// maxVisits bounds the values a config may expand to through aliases; a real config has a few
// hundred.
const maxVisits = 100_000

func (d *decoder) fail(line int, path, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Source: d.source, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
	if line > 0 {
		d.badLines[line] = true
	}
}

func (d *decoder) decode(root *yaml.Node) *Pipeline {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	if doc.Kind == 0 || doc.Kind == yaml.DocumentNode || isNull(doc) {
		d.fail(0, "", "the config is empty: expected a mapping with at least schema and gold (see examples/pipeline.yaml)")
		return nil
	}
	if doc.Kind != yaml.MappingNode {
		d.fail(doc.Line, "", "expected a mapping at the top level, got %s", describe(doc))
		return nil
	}
	d.walk(doc, reflect.TypeFor[Pipeline](), "")
	// Past the cap there is nothing more to report, and yaml.v3 checks mapping keys pairwise:
	// decoding a mangled file with thousands of keys would take seconds.
	if d.visits > maxVisits || len(d.errs) >= maxErrors {
		return nil
	}
	p := &Pipeline{}
	if err := doc.Decode(p); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			d.fail(0, "", "%v", err)
			return nil
		}
		for _, msg := range te.Errors {
			line, rest := splitLine(msg)
			if d.badLines[line] {
				continue
			}
			d.fail(line, d.pathAt(line), "%s", rest)
		}
	}
	return p
}

// walk checks keys and shapes, recording the line of every path it passes.
func (d *decoder) walk(n *yaml.Node, t reflect.Type, path string) {
	if d.visits++; d.visits > maxVisits {
		if d.visits == maxVisits+1 {
			d.fail(n.Line, path, "the document expands to more than %d values through aliases", maxVisits)
		}
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if n.Kind != yaml.ScalarNode {
			d.fail(n.Line, path, "expected a single value, got %s", describe(n))
		}
		return
	}
	if isNull(n) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.fail(n.Line, path, "expected a mapping, got %s", describe(n))
			return
		}
		d.walkMapping(n, t, path, map[string]int{}, false)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n.Line, path, "expected a list, got %s", describe(n))
			return
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.lines[p] = item.Line
			d.walk(item, t.Elem(), p)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n.Line, path, "expected a string, got %s", describe(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.fail(n.Line, path, "expected true or false, got %s", describe(n))
		}
	case reflect.Int, reflect.Int64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.fail(n.Line, path, "expected an integer, got %s", describe(n))
		}
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") {
			d.fail(n.Line, path, "expected a number, got %s", describe(n))
		}
	}
}

// walkMapping checks one mapping. Keys merged in with "<<" are checked after the explicit ones
// and never count as duplicates: an explicit key overrides a merged one, as YAML says.
func (d *decoder) walkMapping(n *yaml.Node, t reflect.Type, path string, seen map[string]int, merged bool) {
	fields := yamlFields(t)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			if v.Kind == yaml.AliasNode && v.Alias != nil {
				v = v.Alias
			}
			if v.Kind == yaml.SequenceNode {
				merges = append(merges, v.Content...)
			} else {
				merges = append(merges, v)
			}
			continue
		}
		child := joinPath(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			if !merged {
				d.fail(k.Line, "", "duplicate key %q in %s (first at line %d)", k.Value, where(path), first)
			}
			continue
		}
		seen[k.Value] = k.Line
		ft, ok := fields[k.Value]
		if !ok {
			if env, secret := secretKeys[k.Value]; secret && t == reflect.TypeFor[S3]() {
				d.fail(k.Line, child, "secrets are not read from the config file: remove this key and set %s in the environment", env)
				continue
			}
			if len(d.errs) >= maxErrors {
				d.fail(k.Line, "", "unknown key") // only counted: spare the suggestion's cost
				continue
			}
			msg := fmt.Sprintf("unknown key %q in %s", k.Value, where(path))
			if s := suggest(k.Value, fields); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (expected one of: " + strings.Join(fieldNames(t), ", ") + ")"
			}
			d.fail(k.Line, "", "%s", msg)
			continue
		}
		if _, ok := d.lines[child]; !ok || !merged {
			d.lines[child] = k.Line
		}
		d.walk(v, ft, child)
	}
	for _, m := range merges {
		if m.Kind == yaml.AliasNode && m.Alias != nil {
			m = m.Alias
		}
		if m.Kind != yaml.MappingNode || d.merging[m] || m == n {
			continue // a cycle: yaml.v3 reports it when decoding
		}
		if d.visits++; d.visits > maxVisits {
			return
		}
		if d.merging == nil {
			d.merging = map[*yaml.Node]bool{}
		}
		d.merging[m] = true
		d.walkMapping(m, t, path, seen, true)
		delete(d.merging, m)
	}
}

// yamlFields maps yaml keys to field types, flattening inline fields.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for name, f := range yamlKeys(t) {
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// fieldNames lists a struct's keys in declaration order (for messages).
func fieldNames(t reflect.Type) []string {
	var out []string
	for name := range yamlKeys(t) {
		out = append(out, name)
	}
	return out
}

// yamlKeys yields the yaml key (as its tag names it; "" when the tag names none) and the field
// of each exported field of struct t, in declaration order, with the fields of inline structs
// in their place.
func yamlKeys(t reflect.Type) iter.Seq2[string, reflect.StructField] {
	return func(yield func(string, reflect.StructField) bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if opts == "inline" {
				for n, g := range yamlKeys(f.Type) {
					if !yield(n, g) {
						return
					}
				}
				continue
			}
			if !yield(name, f) {
				return
			}
		}
	}
}

// suggest returns the known key closest to k, if it is close enough to be a typo.
func suggest(k string, fields map[string]reflect.Type) string {
	best, bestDist := "", 1<<30
	for name := range fields {
		dist := textdist.Distance(strings.ToLower(k), name)
		if dist < bestDist || (dist == bestDist && name < best) {
			best, bestDist = name, dist
		}
	}
	limit := 2
	if len(k) <= 4 {
		limit = 1
	}
	if bestDist <= limit || (best != "" && (strings.HasPrefix(best, k) || strings.HasPrefix(k, best)) && len(k) >= 3) {
		return best
	}
	return ""
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func where(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "nothing"
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// splitLine separates yaml.v3's "line N: msg" prefix.
func splitLine(msg string) (int, string) {
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, m[2]
	}
	return 0, msg
}

// pathAt finds the deepest path recorded at a line.
func (d *decoder) pathAt(line int) string {
	best := ""
	for p, l := range d.lines {
		if l == line && len(p) > len(best) {
			best = p
		}
	}
	return best
}

// syntaxError turns a yaml.v3 parse error into a located FieldError.
func syntaxError(source string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var errs []error
		for _, m := range te.Errors {
			line, rest := splitLine(m)
			errs = append(errs, &FieldError{Source: source, Line: line, Msg: rest})
		}
		return errors.Join(errs...)
	}
	line, rest := splitLine(err.Error())
	return &FieldError{Source: source, Line: line, Msg: "invalid YAML: " + rest}
}
