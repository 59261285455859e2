package bronze

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table/source"
)

// TestKafkaBatchFilesKeepArrivalOrderOnAnyMachine is the Kafka side of issue 30's item 6: the
// same topic ingested with GOMAXPROCS 1, 2, 3 and 8 becomes the same bronze data files, and
// bronze read in commit order holds the records in (partition, offset) order within a batch.
// One batch of 8 partitions is cut into 5 parts (500 records a part), so partitions share a
// part and parts run on several cores. Partitions used to go round-robin to one file per core.
func TestKafkaBatchFilesKeepArrivalOrderOnAnyMachine(t *testing.T) {
	brokers := kafkaBrokers(t)
	const parts = 8
	topic := newTopic(t, brokers, parts)
	cl := kafkaClient(t, brokers)
	want := newProduced()
	produce(t, cl, topic, parts, 2400, rand.New(rand.NewPCG(30, 8)), 40, 4096, want)
	// The oracle: every valid record by partition, then offset (the producer's own record).
	var order []string
	for k := range want.valid {
		order = append(order, k)
	}
	slices.SortFunc(order, func(a, b string) int {
		pa, oa, _ := strings.Cut(a, "@")
		pb, ob, _ := strings.Cut(b, "@")
		ia, _ := strconv.Atoi(pa)
		ib, _ := strconv.Atoi(pb)
		ja, _ := strconv.Atoi(oa)
		jb, _ := strconv.Atoi(ob)
		if ia != ib {
			return ia - ib
		}
		return ja - jb
	})
	var firstLayout []string
	for _, procs := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			lake := fileLake(t)
			opts := kafkaOptions(brokers, topic)
			opts.PartRecords = 500
			if _, err := runKafka(t, lake, opts); err != nil {
				t.Fatal(err)
			}
			bronze := objstore.WithPrefix(lake, opts.BronzePath)
			src := source.New(bronze, source.Options{})
			latest, _, err := src.Latest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			files, _, err := src.NextBatch(context.Background(), &source.Offset{SourceVersion: 1, Index: -1}, latest, source.ReadLimit{})
			if err != nil {
				t.Fatal(err)
			}
			var layout []string
			got := readLineage(t, bronze, files, func(version int64, rows []string) {
				layout = append(layout, fmt.Sprintf("v%d:%s..%s(%d)", version, rows[0], rows[len(rows)-1], len(rows)))
			})
			for i, g := range got {
				// "kafka://topic/p@offset" -> "p@offset"
				got[i] = g[strings.LastIndexByte(g, '/')+1:]
			}
			if !slices.Equal(got, order) {
				t.Fatalf("bronze in commit order holds %d records, not in (partition, offset) order:\n%v\nwant\n%v", len(got), got, order)
			}
			if len(files) < 2 {
				t.Fatalf("bronze has %d files: the batch was not cut into parts, so the test shows nothing", len(files))
			}
			if firstLayout == nil {
				firstLayout = layout
			} else if !slices.Equal(layout, firstLayout) {
				t.Fatalf("data files\n%v\nwith GOMAXPROCS=1 they were\n%v", layout, firstLayout)
			}
		})
	}
}
