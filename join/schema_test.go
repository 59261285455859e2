package join

import (
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/txlog"
)

func fields(names ...string) *txlog.StructType {
	s := &txlog.StructType{}
	for _, n := range names {
		s.Fields = append(s.Fields, txlog.StructField{Name: n, Type: txlog.PrimitiveType{Name: txlog.TypeString}})
	}
	return s
}

func names(s *txlog.StructType) string {
	var out []string
	for _, f := range s.Fields {
		out = append(out, f.Name)
	}
	return strings.Join(out, ",")
}

func TestOutputSchema(t *testing.T) {
	left := fields("event_id", "ad_id", "event_time", "_ingest_time")
	right := fields("click_id", "ad_id", "click_time", "_ingest_time")
	for _, tc := range []struct {
		typ  Type
		want string
	}{
		{Inner, "event_id,ad_id,event_time,_ingest_time,click_id,clicks_ad_id,click_time,clicks__ingest_time"},
		{FullOuter, "event_id,ad_id,event_time,_ingest_time,click_id,clicks_ad_id,click_time,clicks__ingest_time"},
		{LeftSemi, "event_id,ad_id,event_time,_ingest_time"},
	} {
		out, err := Output(tc.typ, left, right, "clicks")
		if err != nil {
			t.Fatal(err)
		}
		if got := names(out.Schema); got != tc.want {
			t.Errorf("%s: columns %s, want %s", tc.typ, got, tc.want)
		}
		for _, f := range out.Schema.Fields {
			if !f.Nullable {
				t.Errorf("%s: column %s is not nullable", tc.typ, f.Name)
			}
		}
		if got := strings.Join(out.RightNames, ","); got != "click_id,clicks_ad_id,click_time,clicks__ingest_time" {
			t.Errorf("%s: right names %s", tc.typ, got)
		}
	}
	q, err := QuarantineSchema(left, right, "clicks")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(q), "event_id,ad_id,event_time,_ingest_time,click_id,clicks_ad_id,click_time,clicks__ingest_time,side,late_watermark,batch_id,query_id"; got != want {
		t.Errorf("quarantine columns %s, want %s", got, want)
	}
	if _, err := Output(Inner, fields("a", "b_a"), fields("a"), "b"); err == nil || !strings.Contains(err.Error(), `"b_a"`) {
		t.Errorf("double collision: err %v, want one naming b_a", err)
	}
}
