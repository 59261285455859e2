package gen

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGolden pins the bytes of a small workload with every kind of line: same seed, same bytes,
// across versions and architectures. A change here changes every test that uses a seed.
func TestGolden(t *testing.T) {
	for _, format := range []string{FormatJSON, FormatCSV} {
		o := opts(40, 1, 1)
		o.Format = format
		o.DuplicateFraction, o.MalformedFraction, o.WrongTypeFraction, o.FutureFraction = 0.1, 0.1, 0.1, 0.05
		o.TimeFormatMix, o.TailFraction, o.NullFraction = 0.3, 0.1, 0.2
		o.Columns = append(o.Columns, Column{Name: "device_id", Kind: "string"}, Column{Name: "note", Kind: "string"},
			Column{Name: "price", Kind: "decimal", Precision: 9, Scale: 3}, Column{Name: "day", Kind: "date"})
		b := mem.New()
		if _, err := Generate(context.Background(), b, o); err != nil {
			t.Fatal(err)
		}
		_, objs := readObjects(t, b, "")
		golden := filepath.Join("testdata", "seed1."+format)
		if *update {
			if err := os.WriteFile(golden, objs[0], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(objs[0], want) {
			t.Errorf("%s workload differs from %s (rerun with -update after checking):\n%s", format, golden, objs[0])
		}
	}
}
