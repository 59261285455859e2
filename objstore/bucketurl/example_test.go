package bucketurl_test

import (
	"fmt"

	"github.com/medallion-lake/medallion/objstore/bucketurl"
)

func ExampleParse() {
	for _, u := range []string{"s3://lake/gold/events_5m/", "file:///var/lake", "gs://lake"} {
		loc, err := bucketurl.Parse(u)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s bucket=%q prefix=%q path=%q\n", loc.Scheme, loc.Bucket, loc.Prefix, loc.Path)
	}
	// Output:
	// s3 bucket="lake" prefix="gold/events_5m" path=""
	// file bucket="" prefix="" path="/var/lake"
	// bucketurl: unsupported location: scheme "gs" in "gs://lake" (want file://, s3:// or a path)
}
