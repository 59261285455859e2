package txlog

import (
	"bytes"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// parseCheckpointParquet reads every action of a checkpoint (or sidecar) Parquet file. Each row
// holds one action: the one non-null top-level struct column. Columns this package does not
// know (partitionValues_parsed, stats_parsed, commitInfo of old writers, ...) are ignored.
func parseCheckpointParquet(data []byte) ([]Action, error) {
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return nil, fmt.Errorf("%w: open parquet: %w", ErrCorruptLog, err)
	}
	schema := f.Schema()
	out := make([]Action, 0, f.NumRows())
	r := parquet.NewReader(f)
	defer r.Close()
	rows := make([]parquet.Row, 64)
	var rowNum int64
	for {
		n, err := r.ReadRows(rows)
		for i := 0; i < n; i++ {
			rowNum++
			m := map[string]any{}
			if rerr := schema.Reconstruct(&m, rows[i]); rerr != nil {
				return nil, fmt.Errorf("%w: row %d: %w", ErrCorruptLog, rowNum, rerr)
			}
			a, cerr := actionFromRow(m)
			if cerr != nil {
				return nil, fmt.Errorf("%w: row %d: %w", ErrCorruptLog, rowNum, cerr)
			}
			out = append(out, a)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: row %d: %w", ErrCorruptLog, rowNum+1, err)
		}
	}
}

func actionFromRow(m map[string]any) (Action, error) {
	var a Action
	if g := group(m, "add"); g != nil {
		add := &Add{
			PartitionValues:         nullableStringMap(g["partitionValues"]),
			Size:                    i64(g["size"]),
			ModificationTime:        i64(g["modificationTime"]),
			DataChange:              boolean(g["dataChange"]),
			Stats:                   str(g["stats"]),
			Tags:                    stringMap(g["tags"]),
			DeletionVector:          dvFromRow(group(g, "deletionVector")),
			BaseRowID:               i64p(g["baseRowId"]),
			DefaultRowCommitVersion: i64p(g["defaultRowCommitVersion"]),
			ClusteringProvider:      str(g["clusteringProvider"]),
		}
		if add.PartitionValues == nil {
			add.PartitionValues = map[string]*string{}
		}
		if err := add.setRaw(str(g["path"])); err != nil {
			return a, err
		}
		a.Add = add
	}
	if g := group(m, "remove"); g != nil {
		rm := &Remove{
			DeletionTimestamp:       i64p(g["deletionTimestamp"]),
			DataChange:              boolean(g["dataChange"]),
			ExtendedFileMetadata:    boolean(g["extendedFileMetadata"]),
			PartitionValues:         nullableStringMap(g["partitionValues"]),
			Size:                    i64p(g["size"]),
			Stats:                   str(g["stats"]),
			Tags:                    stringMap(g["tags"]),
			DeletionVector:          dvFromRow(group(g, "deletionVector")),
			BaseRowID:               i64p(g["baseRowId"]),
			DefaultRowCommitVersion: i64p(g["defaultRowCommitVersion"]),
		}
		if err := rm.setRaw(str(g["path"])); err != nil {
			return a, err
		}
		a.Remove = rm
	}
	if g := group(m, "metaData"); g != nil {
		md := &Metadata{
			ID:               str(g["id"]),
			Name:             str(g["name"]),
			Description:      str(g["description"]),
			SchemaString:     str(g["schemaString"]),
			PartitionColumns: stringList(g["partitionColumns"]),
			Configuration:    stringMap(g["configuration"]),
			CreatedTime:      i64p(g["createdTime"]),
		}
		if fg := group(g, "format"); fg != nil {
			md.Format = Format{Provider: str(fg["provider"]), Options: stringMap(fg["options"])}
		}
		if md.Configuration == nil {
			md.Configuration = map[string]string{}
		}
		if md.PartitionColumns == nil {
			md.PartitionColumns = []string{}
		}
		a.MetaData = md
	}
	if g := group(m, "protocol"); g != nil {
		a.Protocol = &Protocol{
			MinReaderVersion: int(i64(g["minReaderVersion"])),
			MinWriterVersion: int(i64(g["minWriterVersion"])),
			ReaderFeatures:   stringList(g["readerFeatures"]),
			WriterFeatures:   stringList(g["writerFeatures"]),
		}
	}
	if g := group(m, "txn"); g != nil {
		a.Txn = &Txn{AppID: str(g["appId"]), Version: i64(g["version"]), LastUpdated: i64p(g["lastUpdated"])}
	}
	if g := group(m, "domainMetadata"); g != nil {
		a.DomainMetadata = &DomainMetadata{Domain: str(g["domain"]), Configuration: str(g["configuration"]), Removed: boolean(g["removed"])}
	}
	if g := group(m, "checkpointMetadata"); g != nil {
		a.CheckpointMetadata = &CheckpointMetadata{Version: i64(g["version"]), Tags: stringMap(g["tags"])}
	}
	if g := group(m, "sidecar"); g != nil {
		a.Sidecar = &Sidecar{Path: str(g["path"]), SizeInBytes: i64(g["sizeInBytes"]), ModificationTime: i64(g["modificationTime"]), Tags: stringMap(g["tags"])}
	}
	return a, a.validate()
}

func dvFromRow(g map[string]any) *DeletionVector {
	if g == nil || g["storageType"] == nil {
		return nil
	}
	dv := &DeletionVector{
		StorageType:    str(g["storageType"]),
		PathOrInlineDv: str(g["pathOrInlineDv"]),
		SizeInBytes:    int32(i64(g["sizeInBytes"])),
		Cardinality:    i64(g["cardinality"]),
	}
	if off := i64p(g["offset"]); off != nil {
		o := int32(*off)
		dv.Offset = &o
	}
	return dv
}

// group returns a non-null struct column of a reconstructed row.
func group(m map[string]any, key string) map[string]any {
	g, _ := m[key].(map[string]any)
	return g
}

// deref unwraps the pointers Reconstruct produces for optional values inside maps.
func deref(v any) any {
	switch p := v.(type) {
	case *string:
		if p != nil {
			return *p
		}
		return nil
	case *int64:
		if p != nil {
			return *p
		}
		return nil
	case *int32:
		if p != nil {
			return *p
		}
		return nil
	case *bool:
		if p != nil {
			return *p
		}
		return nil
	case *[]byte:
		if p != nil {
			return *p
		}
		return nil
	}
	return v
}

func str(v any) string {
	switch s := deref(v).(type) {
	case string:
		return s
	case []byte:
		return string(s)
	}
	return ""
}

func i64p(v any) *int64 {
	var n int64
	switch x := deref(v).(type) {
	case int64:
		n = x
	case int32:
		n = int64(x)
	case int:
		n = int64(x)
	case uint64:
		n = int64(x)
	case uint32:
		n = int64(x)
	default:
		return nil
	}
	return &n
}

func i64(v any) int64 {
	if p := i64p(v); p != nil {
		return *p
	}
	return 0
}

func boolean(v any) bool { b, _ := deref(v).(bool); return b }

func nullableStringMap(v any) map[string]*string {
	if v == nil {
		return nil
	}
	out := map[string]*string{}
	each := func(k, val any) {
		if val = deref(val); val == nil {
			out[str(k)] = nil
			return
		}
		s := str(val)
		out[str(k)] = &s
	}
	switch m := v.(type) {
	case map[string]any:
		for k, val := range m {
			each(k, val)
		}
	case map[any]any:
		for k, val := range m {
			each(k, val)
		}
	default:
		return nil
	}
	return out
}

func stringMap(v any) map[string]string {
	nm := nullableStringMap(v)
	if nm == nil {
		return nil
	}
	out := make(map[string]string, len(nm))
	for k, val := range nm {
		if val != nil {
			out[k] = *val
		}
	}
	return out
}

func stringList(v any) []string {
	l, ok := v.([]any)
	if !ok {
		if s, ok := v.([]string); ok {
			return s
		}
		return nil
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		out = append(out, str(e))
	}
	return out
}
