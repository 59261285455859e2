package objstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// A table is a bucket rooted at its folder: keys in and out are relative to it.
func ExampleWithPrefix() {
	ctx := context.Background()
	lake := mem.New()
	events := objstore.WithPrefix(lake, "silver/events")
	_ = objstore.PutBytes(ctx, events, "_delta_log/00000000000000000000.json", []byte("{}"))
	infos, _ := objstore.ListAll(ctx, events, "_delta_log/", objstore.ListOptions{})
	fmt.Println(infos[0].Key)
	infos, _ = objstore.ListAll(ctx, lake, "", objstore.ListOptions{})
	fmt.Println(infos[0].Key)
	// Output:
	// _delta_log/00000000000000000000.json
	// silver/events/_delta_log/00000000000000000000.json
}

// An unknown outcome: the commit landed, but the caller was told it failed, as after a
// timeout. The commit protocol must read the entry back to learn the truth.
func ExampleWithFaults() {
	ctx := context.Background()
	b := objstore.WithFaults(mem.New(), objstore.FaultPlan{Faults: []objstore.Fault{
		{Op: objstore.OpPutIfAbsent, Nth: 1, After: true},
	}})
	key := "_delta_log/00000000000000000001.json"
	err := objstore.PutBytesIfAbsent(ctx, b, key, []byte(`{"commitInfo":{"txnId":"t1"}}`))
	fmt.Println(errors.Is(err, objstore.ErrInjected))
	data, _ := objstore.ReadAll(ctx, b, key)
	fmt.Println(string(data))
	// Output:
	// true
	// {"commitInfo":{"txnId":"t1"}}
}
