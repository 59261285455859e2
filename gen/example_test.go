package gen_test

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/objstore/mem"
)

func ExampleGenerate() {
	o := gen.DefaultOptions()
	o.Lines, o.Files, o.Seed = 100_000, 2, 1
	st, err := gen.Generate(context.Background(), mem.New(), o)
	if err != nil {
		panic(err)
	}
	// Every line is one of three kinds; ingest must account for each.
	fmt.Println(st.Lines == st.Events+st.Duplicates+st.Malformed)
	fmt.Println(st.Keys[0])
	// Output:
	// true
	// landing/events/20240501T000000.000000Z-s1-000000.json
}
