package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
)

// A Delta commit is a put-if-absent of the next log entry: the second writer loses.
func Example() {
	dir, _ := os.MkdirTemp("", "lake")
	defer os.RemoveAll(dir)
	b, err := file.New(dir)
	if err != nil {
		panic(err)
	}
	defer b.Close()
	ctx := context.Background()
	key := "events/_delta_log/00000000000000000000.json"
	fmt.Println(objstore.PutBytesIfAbsent(ctx, b, key, []byte(`{"commitInfo":{}}`)))
	err = objstore.PutBytesIfAbsent(ctx, b, key, []byte(`{"commitInfo":{}}`))
	fmt.Println(errors.Is(err, objstore.ErrAlreadyExists))
	// Output:
	// <nil>
	// true
}
