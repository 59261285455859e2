// Command tsparse reads timestamp values with medallion's timestamp column parser
// (timefmt.Parser: a Spark datetime pattern, an epoch unit or the default forms), so that the
// interop suite (tests/interop/test_timestamp_formats.py) can compare each answer with Spark's
// to_timestamp and timestamp_seconds/millis/micros on the same values. A test tool, not part
// of the medallion CLI.
//
//	tsparse < SPEC.json > RESULT.json
//
// SPEC is [{"format": PATTERN, "unit": UNIT, "values": [TEXT, ...]}, ...] (at most one of format
// and unit). RESULT is, per case, {"error": message} when the format does not compile, else
// {"micros": [microseconds since the epoch, or null when the value does not parse, ...]}.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/medallion-lake/medallion/bronze/timefmt"
)

type tcase struct {
	Format string   `json:"format"`
	Unit   string   `json:"unit"`
	Values []string `json:"values"`
}

type answer struct {
	Error  string   `json:"error,omitempty"`
	Micros []*int64 `json:"micros,omitempty"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tsparse:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var cases []tcase
	if err := json.NewDecoder(in).Decode(&cases); err != nil {
		return err
	}
	answers := make([]answer, len(cases))
	for i, c := range cases {
		p, err := timefmt.New(c.Format, c.Unit)
		if err != nil {
			answers[i].Error = err.Error()
			continue
		}
		answers[i].Micros = make([]*int64, len(c.Values))
		for k, v := range c.Values {
			if us, err := p.Parse([]byte(v)); err == nil {
				answers[i].Micros[k] = &us
			}
		}
	}
	return json.NewEncoder(out).Encode(answers)
}
