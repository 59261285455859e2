package config_test

import (
	"fmt"

	"github.com/medallion-lake/medallion/config"
)

func ExampleParse() {
	_, err := config.Parse([]byte(`
schema:
  - {name: event_id, type: string}
  - {name: event_time, type: timestamp}
stream:
  watermrk: 10m
gold:
  - name: events_5m
    window: {type: sliding, size: 5m, slide: 10m}
    aggregates: [{fn: count}]
`), "pipeline.yaml")
	fmt.Println(err)
	// Output:
	// pipeline.yaml:6: unknown key "watermrk" in stream (did you mean "watermark"?)
	// pipeline.yaml:5: stream.watermark: required by gold[0] (events_5m) in append mode: Append output mode not supported when there are streaming aggregations on streaming DataFrames/DataSets without watermark
	// pipeline.yaml:9: gold[0].window.slide: slide 10m is larger than size 5m: expected slide <= size
}

func ExamplePipeline_Override() {
	p, err := config.Load("../examples/pipeline.yaml")
	if err != nil {
		panic(err)
	}
	// What `medallion run stream --set stream.trigger=once` does.
	if err := p.Override("stream.trigger", "once"); err != nil {
		panic(err)
	}
	fmt.Println(p.Stream.Trigger, p.Gold[0].Window.Size)
	fmt.Println(p.Override("gold.events_5m.window.size", "5 minutes"))
	// Output:
	// once 5m
	// config: override gold.events_5m.window.size: ../examples/pipeline.yaml: gold[0].window.size: invalid duration "5 minutes": expected a number with a unit, such as 500ms, 30s, 10m, 1h or 7d
}
