package config

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Override sets one key, as if it had been written in the file, then decodes and validates the
// whole config again: the same strict rules apply to flags as to the file. key is a dotted
// path ("stream.trigger", "stream.watermark", "landing.max_files_per_trigger"); list items are
// picked by index or, for gold, by name ("gold.events_5m.output_mode", "gold[0].output_mode",
// "gold.0.output_mode"). value is YAML ("30s", "true", "[event_id]"). On error the Pipeline is
// left unchanged. The environment applied by ApplyEnv is applied again.
func (p *Pipeline) Override(key, value string) error {
	return p.OverrideAll([]KeyValue{{Key: key, Value: value}})
}

// KeyValue is one override: a dotted key and its YAML value.
type KeyValue struct{ Key, Value string }

// OverrideAll sets every key first and validates once, as Override does for one: a rule that
// ties two keys together (jobs.vacuum.retain and allow_short_retention) sees both, whatever
// their order on the command line. On error the Pipeline is left unchanged.
func (p *Pipeline) OverrideAll(kvs []KeyValue) error {
	return p.OverrideAllContext(context.Background(), kvs)
}

// OverrideAllContext is OverrideAll that stops when ctx ends, as ParseContext does (the
// whole config is validated again, its expectations parsed again); the Pipeline is then left
// unchanged and the error wraps ctx's.
func (p *Pipeline) OverrideAllContext(ctx context.Context, kvs []KeyValue) error {
	if p.root == nil {
		return &FieldError{Source: "override", Msg: "the config was not parsed from YAML; set the field directly"}
	}
	if len(kvs) == 0 {
		return nil
	}
	root := cloneNode(p.root)
	var keys []string
	for _, kv := range kvs {
		if err := setNode(root, kv.Key, kv.Value); err != nil {
			return err
		}
		keys = append(keys, kv.Key)
	}
	np, err := decode(ctx, root, p.sourceName())
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	if err != nil {
		// The value is not echoed: it may be a secret given on the wrong key.
		return fmt.Errorf("config: override %s: %w", strings.Join(keys, ", "), err)
	}
	env := p.env
	*p = *np
	if env != nil {
		p.ApplyEnv(env)
	}
	return nil
}

// setNode writes value (YAML) at the dotted key in the tree root.
func setNode(root *yaml.Node, key, value string) error {
	fail := func(format string, args ...any) error {
		return &FieldError{Source: "override " + key, Msg: fmt.Sprintf(format, args...)}
	}
	var val yaml.Node
	if err := yaml.Unmarshal([]byte(value), &val); err != nil {
		// Values such as "a: b" or "{x" are YAML syntax; a shell user rarely means that.
		return fail("invalid value %q: %v; to set it as text, quote it: --set '%s=\"%s\"'", value, err, key, value)
	}
	newVal := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}
	if val.Kind == yaml.DocumentNode && len(val.Content) > 0 {
		newVal = val.Content[0]
	}
	clearLines(newVal)

	cur := root
	if cur.Kind == yaml.DocumentNode {
		cur = cur.Content[0]
	}
	segs := splitKey(key)
	if len(segs) == 0 {
		return fail("empty key: expected a dotted path such as stream.trigger")
	}
	for i, seg := range segs {
		last := i == len(segs)-1
		switch cur.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for j := 0; j+1 < len(cur.Content); j += 2 {
				if cur.Content[j].Value == seg {
					if last {
						cur.Content[j+1] = newVal
						cur.Content[j].Line = 0
					}
					next = cur.Content[j+1]
					break
				}
			}
			if next == nil {
				next = newVal
				if !last {
					next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				}
				cur.Content = append(cur.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: seg}, next)
			}
			cur = next
		case yaml.SequenceNode:
			idx := seqIndex(cur, seg)
			if idx < 0 {
				return fail("no item %q in %s: expected an index below %d or a name", seg, strings.Join(segs[:i], "."), len(cur.Content))
			}
			if last {
				cur.Content[idx] = newVal
			}
			cur = cur.Content[idx]
		case yaml.ScalarNode:
			if isNull(cur) && !last {
				cur.Kind, cur.Tag = yaml.MappingNode, "!!map"
				cur.Content = []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: seg}}
				next := newVal
				if i+1 < len(segs) {
					next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				}
				cur.Content = append(cur.Content, next)
				cur = next
				continue
			}
			return fail("%s is a single value, not a mapping", strings.Join(segs[:i], "."))
		default:
			return fail("cannot set %s", key)
		}
	}
	return nil
}

// splitKey turns "gold[0].window.size" into [gold 0 window size].
func splitKey(key string) []string {
	key = strings.NewReplacer("[", ".", "]", "").Replace(key)
	var out []string
	for _, s := range strings.Split(key, ".") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// seqIndex finds a list item by index or by its name key.
func seqIndex(seq *yaml.Node, seg string) int {
	if n, err := strconv.Atoi(seg); err == nil {
		if n >= 0 && n < len(seq.Content) {
			return n
		}
		return -1
	}
	for i, item := range seq.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(item.Content); j += 2 {
			if item.Content[j].Value == "name" && item.Content[j+1].Value == seg {
				return i
			}
		}
	}
	return -1
}

func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = cloneNode(ch)
	}
	// Aliases keep pointing into the original tree; they are only read.
	return &c
}

// clearLines marks nodes as not from the file, so messages about them carry no line.
func clearLines(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		clearLines(c)
	}
}

// ApplyEnv fills S3 settings the file left empty from the AWS environment (AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL, AWS_REGION, AWS_DEFAULT_REGION; region us-east-1 when none is set) and takes
// credentials only from it (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). lookup
// is os.LookupEnv outside tests.
func (p *Pipeline) ApplyEnv(lookup func(string) (string, bool)) {
	p.env = lookup
	first := func(names ...string) string {
		for _, n := range names {
			if v, ok := lookup(n); ok && v != "" {
				return v
			}
		}
		return ""
	}
	if p.S3.Endpoint == "" {
		p.S3.Endpoint = first("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	}
	if p.S3.Region == "" {
		p.S3.Region = first("AWS_REGION", "AWS_DEFAULT_REGION")
	}
	if p.S3.Region == "" {
		p.S3.Region = "us-east-1"
	}
	p.Landing.Notify.Token = WebhookToken(first("MEDALLION_WEBHOOK_TOKEN"))
	// Every Kafka source without brokers of its own takes KAFKA_BROKERS.
	landings := []*Landing{&p.Landing}
	for i := range p.Sources {
		landings = append(landings, &p.Sources[i].Landing)
	}
	for _, l := range landings {
		if k := l.Kafka; k != nil && l.Kind == LandingKafka && len(k.Brokers) == 0 {
			for _, b := range strings.Split(first("KAFKA_BROKERS"), ",") {
				if b = strings.TrimSpace(b); b != "" {
					k.Brokers = append(k.Brokers, b)
				}
			}
		}
	}
	p.S3.Credentials = Credentials{
		AccessKeyID:     first("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: first("AWS_SECRET_ACCESS_KEY"),
		SessionToken:    first("AWS_SESSION_TOKEN"),
	}
}

// LookupEnv reads the environment that ApplyEnv was given (os.LookupEnv after Load): jobs read
// secrets such as the Kafka SASL password through it, so tests can pass their own.
func (p *Pipeline) LookupEnv(name string) (string, bool) {
	if p.env == nil {
		return "", false
	}
	return p.env(name)
}

// Redacted prints the effective config (defaults and environment applied) as YAML, for logs and
// `--print-config`. Credentials appear only as set/unset.
func (p *Pipeline) Redacted() string {
	out, err := yaml.Marshal(p)
	if err != nil {
		// Every field type marshals; this would be a bug in a MarshalYAML method.
		return fmt.Sprintf("# config: cannot print: %v\n", err)
	}
	return "# effective config of " + p.sourceName() + "\n# s3 credentials: " + p.S3.Credentials.String() +
		"\n" + string(out)
}
