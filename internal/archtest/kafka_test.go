package archtest

import (
	"strings"
	"testing"
)

// franzClient is the one franz-go package the stages outside kafka/ may import: the client, its
// options and its records, which they hold and pass on. The Kafka protocol (admin requests,
// offsets, error codes, SASL) is spoken in kafka/ alone (DESIGN.md §1: the Kafka client side
// that several stages share has one home).
const franzClient = "github.com/twmb/franz-go/pkg/kgo"

// TestKafkaProtocolInKafka fails when a package other than kafka/ imports a franz-go package
// other than kgo (tests may: they set up topics to check against).
func TestKafkaProtocolInKafka(t *testing.T) {
	if rank, row := rankOf("kafka"); rank < 0 || row != "kafka" {
		t.Fatalf("kafka/ is in row %q of ranks, want its own row \"kafka\"", row)
	}
	users := 0
	for _, p := range modulePackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, "github.com/twmb/franz-go/") {
				continue
			}
			if rel == "kafka" {
				users++
				continue
			}
			if imp != franzClient {
				t.Errorf("%s imports %s: the Kafka protocol is kafka/'s (offsets, lag, admin, connection settings); call package kafka instead", rel, imp)
			}
		}
	}
	if users == 0 {
		t.Fatal("package kafka imports no franz-go package: the rule checks nothing")
	}
}
