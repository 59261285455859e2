package bronze

import (
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// TestPromoterMovesWhatIngestWouldFit: a rescued value moves into its declared column when the
// column is null and the value fits as ingest would fit it (JSON parser rules; CSV text
// conversion), the first fitting occurrence wins, and the object keeps the rest verbatim.
func TestPromoterMovesWhatIngestWouldFit(t *testing.T) {
	declared := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "id", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "n", Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: true},
	}}
	for _, tc := range []struct {
		name, format string
		n            any // the row's n before
		rescued      any
		wantN        any
		wantRescued  any
	}{
		{"json fits", FormatJSON, nil, `{"n":5}`, int64(5), nil},
		{"json keeps the other keys verbatim", FormatJSON, nil, `{"a" : [1, 2],"n":5,"z\u00e9":"x"}`, int64(5), `{"a":[1, 2],"z\u00e9":"x"}`},
		{"json wrong type stays", FormatJSON, nil, `{"n":"5"}`, nil, `{"n":"5"}`},
		{"json out of range stays", FormatJSON, nil, `{"n":1e40}`, nil, `{"n":1e40}`},
		{"json first fitting occurrence wins", FormatJSON, nil, `{"n":"x","n":6,"n":7}`, int64(6), `{"n":"x","n":7}`},
		{"json row has a value already", FormatJSON, int64(1), `{"n":6}`, int64(1), `{"n":6}`},
		{"json null stays", FormatJSON, nil, `{"n":null}`, nil, `{"n":null}`},
		{"csv text converts", FormatCSV, nil, `{"n":"42","other":"v"}`, int64(42), `{"other":"v"}`},
		{"csv bad text stays", FormatCSV, nil, `{"n":"4x"}`, nil, `{"n":"4x"}`},
		{"not an object", FormatJSON, nil, `[1]`, nil, `[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPromoter(declared, tc.format, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := pq.NewBatch(BronzeSchema(declared))
			if err != nil {
				t.Fatal(err)
			}
			b.Columns[0].AppendString("r1")
			if tc.n == nil {
				b.Columns[1].AppendNull()
			} else {
				b.Columns[1].AppendInt64(tc.n.(int64))
			}
			if tc.rescued == nil {
				b.Columns[2].AppendNull()
			} else {
				b.Columns[2].AppendString(tc.rescued.(string))
			}
			b.Columns[3].AppendInt64(0)
			b.Columns[4].AppendString("f")
			b.Columns[5].AppendInt64(0)
			out, moved, err := p.Promote(b)
			if err != nil {
				t.Fatal(err)
			}
			row := out.Row(0)
			if row[1] != tc.wantN || row[2] != tc.wantRescued {
				t.Fatalf("n %v, rescued %v; want %v, %v", row[1], row[2], tc.wantN, tc.wantRescued)
			}
			if wantMoved := tc.wantN != tc.n; (moved == 1) != wantMoved {
				t.Errorf("moved %d values", moved)
			}
			if again, n, _ := p.Promote(out); n != 0 || again != out {
				t.Errorf("a second Promote moved %d values", n)
			}
		})
	}
}
