package txlog

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/parquet-go/parquet-go"
)

// Checkpoint decoding (parseCheckpointParquet) of layouts other writers produce: Spark's
// checkpoint schema, where every field is nullable, with columns that are null in every row
// (no add at all, no deletion vector, no stats, no partition values), null map values,
// deletion vectors with and without an offset, actions only in the last of several row groups,
// tiny pages, and a checkpoint part of zero rows. The oracle is the actions the test wrote.

type skDV struct {
	StorageType    *string `parquet:"storageType,optional"`
	PathOrInlineDv *string `parquet:"pathOrInlineDv,optional"`
	Offset         *int32  `parquet:"offset,optional"`
	SizeInBytes    *int32  `parquet:"sizeInBytes,optional"`
	Cardinality    *int64  `parquet:"cardinality,optional"`
	MaxRowIndex    *int64  `parquet:"maxRowIndex,optional"`
}

type skAdd struct {
	Path                    *string            `parquet:"path,optional"`
	PartitionValues         map[string]*string `parquet:"partitionValues,optional"`
	Size                    *int64             `parquet:"size,optional"`
	ModificationTime        *int64             `parquet:"modificationTime,optional"`
	DataChange              *bool              `parquet:"dataChange,optional"`
	Tags                    map[string]string  `parquet:"tags,optional"`
	DeletionVector          *skDV              `parquet:"deletionVector,optional"`
	BaseRowID               *int64             `parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
	ClusteringProvider      *string            `parquet:"clusteringProvider,optional"`
	Stats                   *string            `parquet:"stats,optional"`
}

type skRemove struct {
	Path                    *string            `parquet:"path,optional"`
	DeletionTimestamp       *int64             `parquet:"deletionTimestamp,optional"`
	DataChange              *bool              `parquet:"dataChange,optional"`
	ExtendedFileMetadata    *bool              `parquet:"extendedFileMetadata,optional"`
	PartitionValues         map[string]*string `parquet:"partitionValues,optional"`
	Size                    *int64             `parquet:"size,optional"`
	DeletionVector          *skDV              `parquet:"deletionVector,optional"`
	BaseRowID               *int64             `parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
}

type skFormat struct {
	Provider *string           `parquet:"provider,optional"`
	Options  map[string]string `parquet:"options,optional"`
}

type skMeta struct {
	ID               *string           `parquet:"id,optional"`
	Name             *string           `parquet:"name,optional"`
	Description      *string           `parquet:"description,optional"`
	Format           *skFormat         `parquet:"format,optional"`
	SchemaString     *string           `parquet:"schemaString,optional"`
	PartitionColumns []string          `parquet:"partitionColumns,list,optional"`
	Configuration    map[string]string `parquet:"configuration,optional"`
	CreatedTime      *int64            `parquet:"createdTime,optional"`
}

type skProtocol struct {
	MinReaderVersion *int32   `parquet:"minReaderVersion,optional"`
	MinWriterVersion *int32   `parquet:"minWriterVersion,optional"`
	ReaderFeatures   []string `parquet:"readerFeatures,list,optional"`
	WriterFeatures   []string `parquet:"writerFeatures,list,optional"`
}

type skTxn struct {
	AppID       *string `parquet:"appId,optional"`
	Version     *int64  `parquet:"version,optional"`
	LastUpdated *int64  `parquet:"lastUpdated,optional"`
}

// skRow is Spark's checkpoint row: every action and every field nullable.
type skRow struct {
	Txn      *skTxn      `parquet:"txn,optional"`
	Add      *skAdd      `parquet:"add,optional"`
	Remove   *skRemove   `parquet:"remove,optional"`
	MetaData *skMeta     `parquet:"metaData,optional"`
	Protocol *skProtocol `parquet:"protocol,optional"`
}

func i64p(v int64) *int64 { return &v }
func i32p(v int32) *int32 { return &v }
func bp(v bool) *bool     { return &v }

func skProtocolRow() (skRow, Action) {
	return skRow{Protocol: &skProtocol{MinReaderVersion: i32p(3), MinWriterVersion: i32p(7),
			ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}},
		Action{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}}
}

func skMetaRow() (skRow, Action) {
	return skRow{MetaData: &skMeta{ID: sp("tbl"), Format: &skFormat{Provider: sp("parquet"), Options: map[string]string{}},
			SchemaString: sp(testSchema), PartitionColumns: []string{"day"}, Configuration: map[string]string{"k": "v"}, CreatedTime: i64p(5)}},
		Action{MetaData: &Metadata{ID: "tbl", Format: Format{Provider: "parquet", Options: map[string]string{}}, SchemaString: testSchema,
			PartitionColumns: []string{"day"}, Configuration: map[string]string{"k": "v"}, CreatedTime: i64p(5)}}
}

// skAddRow makes add i in one of several shapes, and the action it must read as.
func skAddRow(i int) (skRow, Action) {
	path := fmt.Sprintf("day=d%d/part-%05d.parquet", i%3, i)
	r := &skAdd{Path: sp(path), Size: i64p(int64(100 + i)), ModificationTime: i64p(int64(i)), DataChange: bp(i%2 == 0)}
	a := &Add{Path: path, Size: int64(100 + i), ModificationTime: int64(i), DataChange: i%2 == 0, rawPath: path}
	switch i % 7 {
	case 0: // everything optional null, partition values empty
		r.PartitionValues = map[string]*string{}
		a.PartitionValues = map[string]*string{}
	case 1: // a null partition value
		r.PartitionValues = map[string]*string{"day": nil}
		a.PartitionValues = map[string]*string{"day": nil}
	case 2: // inline DV: offset null
		r.PartitionValues = map[string]*string{"day": sp("d")}
		a.PartitionValues = map[string]*string{"day": sp("d")}
		r.DeletionVector = &skDV{StorageType: sp("i"), PathOrInlineDv: sp("wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"), SizeInBytes: i32p(40), Cardinality: i64p(6), MaxRowIndex: i64p(9)}
		a.DeletionVector = &DeletionVector{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}
	case 3: // on-disk DV at offset 1, stats
		r.PartitionValues = map[string]*string{"day": sp("")}
		a.PartitionValues = map[string]*string{"day": sp("")}
		r.DeletionVector = &skDV{StorageType: sp("u"), PathOrInlineDv: sp("ab^-aqEH.-t@S}K{vb[*k^"), Offset: i32p(1), SizeInBytes: i32p(36), Cardinality: i64p(int64(i))}
		a.DeletionVector = &DeletionVector{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: i32p(1), SizeInBytes: 36, Cardinality: int64(i)}
		r.Stats = sp(`{"numRecords":3}`)
		a.Stats = `{"numRecords":3}`
	case 4: // a DV struct present with null fields reads as no DV
		r.PartitionValues = map[string]*string{}
		a.PartitionValues = map[string]*string{}
		r.DeletionVector = &skDV{}
	case 5: // tags, row tracking, clustering
		r.PartitionValues = map[string]*string{"day": sp("x"), "h": nil}
		a.PartitionValues = map[string]*string{"day": sp("x"), "h": nil}
		r.Tags = map[string]string{"INSERTION_TIME": "1"}
		a.Tags = map[string]string{"INSERTION_TIME": "1"}
		r.BaseRowID, r.DefaultRowCommitVersion, r.ClusteringProvider = i64p(int64(i)*10), i64p(2), sp("liquid")
		a.BaseRowID, a.DefaultRowCommitVersion, a.ClusteringProvider = i64p(int64(i)*10), i64p(2), "liquid"
	case 6: // empty stats string is not null stats
		r.PartitionValues = map[string]*string{}
		a.PartitionValues = map[string]*string{}
		r.Stats = sp("")
	}
	return skRow{Add: r}, Action{Add: a}
}

func skRemoveRow(i int) (skRow, Action) {
	path := fmt.Sprintf("old-%d.parquet", i)
	r := &skRemove{Path: sp(path), DeletionTimestamp: i64p(int64(i)), DataChange: bp(true), ExtendedFileMetadata: bp(i%2 == 0)}
	a := &Remove{Path: path, DeletionTimestamp: i64p(int64(i)), DataChange: true, ExtendedFileMetadata: i%2 == 0, rawPath: path}
	if i%2 == 0 {
		r.PartitionValues, r.Size = map[string]*string{"day": nil}, i64p(3)
		a.PartitionValues, a.Size = map[string]*string{"day": nil}, i64p(3)
	}
	return skRow{Remove: r}, Action{Remove: a}
}

func writeSK(t *testing.T, rows []skRow, opts ...parquet.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[skRow](&buf, opts...)
	if len(rows) > 0 {
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func actionLines(t *testing.T, actions []Action) []string {
	t.Helper()
	var out []string
	for _, a := range actions {
		b, err := MarshalActions([]Action{a})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(string(b)))
	}
	return out
}

func TestDecodersCheckpointNullColumns(t *testing.T) {
	pr, pa := skProtocolRow()
	mr, ma := skMetaRow()
	type tc struct {
		name string
		rows []skRow
		want []Action
	}
	var cases []tc
	// No add at all: the add column is null in every row.
	{
		c := tc{name: "no add", rows: []skRow{pr, mr, {Txn: &skTxn{AppID: sp("app"), Version: i64p(4)}}}, want: []Action{pa, ma, {Txn: &Txn{AppID: "app", Version: 4}}}}
		for i := 0; i < 3; i++ {
			r, a := skRemoveRow(i)
			c.rows, c.want = append(c.rows, r), append(c.want, a)
		}
		cases = append(cases, c)
	}
	// Only protocol and metadata.
	cases = append(cases, tc{name: "protocol and metadata only", rows: []skRow{mr, pr}, want: []Action{ma, pa}})
	// Many adds whose optional fields are null in whole pages and row groups; protocol and
	// metadata in the last row group only.
	for _, shape := range []string{"all null optionals", "mixed"} {
		c := tc{name: shape}
		for i := 0; i < 3000; i++ {
			k := i
			if shape == "all null optionals" {
				k = i * 7 // always shape 0
			}
			r, a := skAddRow(k)
			if i%500 == 499 {
				r, a = skRemoveRow(i)
			}
			c.rows, c.want = append(c.rows, r), append(c.want, a)
		}
		c.rows, c.want = append(c.rows, pr, mr), append(c.want, pa, ma)
		cases = append(cases, c)
	}
	for _, c := range cases {
		for _, o := range []struct {
			name string
			opts []parquet.WriterOption
		}{
			{"default", nil},
			{"tiny pages, row groups of 700, v2", []parquet.WriterOption{parquet.PageBufferSize(128), parquet.MaxRowsPerRowGroup(700), parquet.DataPageVersion(2)}},
			{"tiny pages, row groups of 1", []parquet.WriterOption{parquet.PageBufferSize(64), parquet.MaxRowsPerRowGroup(1)}},
		} {
			if o.name == "tiny pages, row groups of 1" && len(c.rows) > 100 {
				continue
			}
			t.Run(c.name+"/"+o.name, func(t *testing.T) {
				data := writeSK(t, c.rows, o.opts...)
				got, err := parseCheckpointParquet(data)
				if err != nil {
					t.Fatal(err)
				}
				g, w := actionLines(t, got), actionLines(t, c.want)
				if len(g) != len(w) {
					t.Fatalf("%d actions, want %d", len(g), len(w))
				}
				for i := range g {
					if g[i] != w[i] {
						t.Fatalf("action %d:\n got  %s\n want %s", i, g[i], w[i])
					}
				}
			})
		}
	}
}

// TestDecodersCheckpointZeroRowPart: a multi-part checkpoint of which one part holds no
// action (a writer that partitions a few actions over many parts), and a part of zero row
// groups. Both parse as no actions, and the snapshot is the union of the parts.
func TestDecodersCheckpointZeroRowPart(t *testing.T) {
	empty := writeSK(t, nil)
	got, err := parseCheckpointParquet(empty)
	if err != nil || len(got) != 0 {
		t.Fatalf("zero-row checkpoint: %d actions, %v", len(got), err)
	}
	ctx := context.Background()
	b := mem.New()
	pr, _ := skProtocolRow()
	mr, _ := skMetaRow()
	pr.Protocol.ReaderFeatures, pr.Protocol.WriterFeatures = nil, nil
	pr.Protocol.MinReaderVersion, pr.Protocol.MinWriterVersion = i32p(1), i32p(2)
	a0, _ := skAddRow(0)
	a1, _ := skAddRow(1)
	parts := [][]skRow{{pr, mr}, nil, {a0, a1}}
	for i, rows := range parts {
		key := fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", LogDir, 3, i+1, len(parts))
		if err := objstore.PutBytes(ctx, b, key, writeSK(t, rows)); err != nil {
			t.Fatal(err)
		}
	}
	snap := mustSnapshot(t, New(b, Options{}))
	if snap.Version() != 3 || snap.CheckpointVersion() != 3 {
		t.Fatalf("version %d, checkpoint %d", snap.Version(), snap.CheckpointVersion())
	}
	if n := len(snap.Files()); n != 2 {
		t.Fatalf("%d live files, want 2", n)
	}
}

// TestDecodersV2CheckpointEmptySidecar: a UUID-named v2 checkpoint whose sidecars include one
// of zero rows (a writer that cuts file actions into sidecars by size and ends on an empty one),
// and whose file actions are all in the other.
func TestDecodersV2CheckpointEmptySidecar(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	write := func(key string, rows []cpReadRow) {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[cpReadRow](&buf)
		if len(rows) > 0 {
			if _, err := w.Write(rows); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := objstore.PutBytes(ctx, b, key, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	write(sidecarDir+"empty.parquet", nil)
	write(sidecarDir+"full.parquet", []cpReadRow{
		{Add: &cpAdd{Path: "a.parquet", PartitionValues: map[string]*string{}, Size: 5}},
		{Add: &cpAdd{Path: "b.parquet", PartitionValues: map[string]*string{"day": nil}, Size: 7}},
	})
	write(LogDir+"00000000000000000004.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet", []cpReadRow{
		{CheckpointMetadata: &cpCheckpointMD{Version: 4}},
		{Protocol: &cpProtocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}},
		{MetaData: &cpMetadata{ID: "t", Format: cpFormat{Provider: "parquet", Options: map[string]string{}}, SchemaString: testSchema, PartitionColumns: []string{}, Configuration: map[string]string{}}},
		{Sidecar: &cpSidecar{Path: "empty.parquet", SizeInBytes: 1, ModificationTime: 1}},
		{Sidecar: &cpSidecar{Path: "full.parquet", SizeInBytes: 1, ModificationTime: 1}},
	})
	snap := mustSnapshot(t, New(b, Options{}))
	if snap.Version() != 4 || snap.CheckpointVersion() != 4 || len(snap.Files()) != 2 {
		t.Fatalf("v%d cp%d, %d files", snap.Version(), snap.CheckpointVersion(), len(snap.Files()))
	}
}
