// Package archtest holds the architecture checks that run with the tests: the import arrows of
// DESIGN.md §1 and the rule that late/ never needs the stream runner (arrows_test.go), and the
// rule that only kafka/ speaks the Kafka protocol (kafka_test.go). It has no code of its own
// and holds nothing across a crash.
package archtest
