package pq_test

import (
	"encoding/json"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

func TestAppendJSONRow(t *testing.T) {
	b, _ := pqtest.AllTypesBatch(t)
	want := []string{
		`{"s":"héllo","l":9223372036854775807,"i":-2147483648,"sh":-32768,"by":127,"d":-1.5e+300,"f":3.25,"b":true,"bin":"AAH/",` +
			`"dt":"0001-01-01","ts":"1969-07-20T20:17:40.123456Z","ntz":"9999-12-31T23:59:59.999999",` +
			`"dec":9999999999999999999999999999.9999999999,"dsmall":-999.99,"window":{"start":"1970-01-01T00:00:00Z","end":"1970-01-01T00:05:00Z"},` +
			`"arr":[1,null,3],"m":{"a":-1,"b":null},"as":[{"val":7},null],"req":0}`,
		`{"s":null,"l":null,"i":null,"sh":null,"by":null,"d":null,"f":null,"b":null,"bin":null,"dt":null,"ts":null,"ntz":null,` +
			`"dec":null,"dsmall":null,"window":null,"arr":[],"m":{},"as":null,"req":-9223372036854775808}`,
	}
	for i, w := range want {
		got := string(pq.AppendJSONRow(nil, b, i))
		if got != w {
			t.Errorf("row %d:\ngot  %s\nwant %s", i, got, w)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("row %d is not valid JSON", i)
		}
	}
}
