package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func BenchmarkParseExample(b *testing.B) {
	data, err := os.ReadFile("../examples/pipeline.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, "pipeline.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseMangled: 20,000 unknown keys in one mapping (630 kB). yaml.v3 alone checks
// them pairwise (seconds); the strict walk stops at the error cap first.
func BenchmarkParseMangled(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("stream: {")
	for i := range 20_000 {
		fmt.Fprintf(&sb, "k%s%c: 1, ", strings.Repeat("x", i%50), 'a'+i%26)
	}
	sb.WriteString("}\n")
	benchmarkBad(b, sb.String())
}

// BenchmarkParseAliasedGold: 9,000 gold entries through one alias, all on the same table.
func BenchmarkParseAliasedGold(b *testing.B) {
	benchmarkBad(b, "x: &g {name: g, window: {type: tumbling, size: 1m}, aggregates: [{fn: count}]}\ngold: ["+
		strings.TrimSuffix(strings.Repeat("*g, ", 9000), ", ")+"]\n")
}

func benchmarkBad(b *testing.B, text string) {
	data := []byte(text)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, "bad.yaml"); err == nil {
			b.Fatal("accepted")
		}
	}
}
