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
func parseCheckpointParquet(data []byte) (actions []Action, err error) {
	// parquet-go can panic on malformed files; a corrupt checkpoint must be an error (the
	// caller then falls back to an older checkpoint), never a crash.
	defer func() {
		if r := recover(); r != nil {
			actions, err = nil, fmt.Errorf("%w: malformed parquet: %v", ErrCorruptLog, r)
		}
	}()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return nil, fmt.Errorf("%w: open parquet: %w", ErrCorruptLog, err)
	}
	// The footer's row count is only a hint: a corrupt one must not reserve unbounded memory.
	out := make([]Action, 0, min(f.NumRows(), 1<<16))
	r := parquet.NewGenericReader[cpReadRow](f)
	defer r.Close()
	rows := make([]cpReadRow, 256)
	var rowNum int64
	for {
		clear(rows)
		n, err := r.Read(rows)
		for i := 0; i < n; i++ {
			rowNum++
			a, cerr := actionFromCPRow(&rows[i])
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

// cpReadRow is cpRow plus the v2-checkpoint columns, which our own checkpoints never carry.
// Reading through a struct lets parquet-go map any writer's column layout (extra columns such
// as stats_parsed dropped, missing ones null, required or optional) onto it.
type cpReadRow struct {
	Txn                *cpTxn          `parquet:"txn,optional"`
	Add                *cpAdd          `parquet:"add,optional"`
	Remove             *cpRemove       `parquet:"remove,optional"`
	MetaData           *cpMetadata     `parquet:"metaData,optional"`
	Protocol           *cpProtocol     `parquet:"protocol,optional"`
	DomainMetadata     *cpDomain       `parquet:"domainMetadata,optional"`
	CheckpointMetadata *cpCheckpointMD `parquet:"checkpointMetadata,optional"`
	Sidecar            *cpSidecar      `parquet:"sidecar,optional"`
}

type cpCheckpointMD struct {
	Version int64             `parquet:"version"`
	Tags    map[string]string `parquet:"tags,optional"`
}

type cpSidecar struct {
	Path             string            `parquet:"path"`
	SizeInBytes      int64             `parquet:"sizeInBytes"`
	ModificationTime int64             `parquet:"modificationTime"`
	Tags             map[string]string `parquet:"tags,optional"`
}

func fromCPDV(dv *cpDV) *DeletionVector {
	if dv == nil || dv.StorageType == "" {
		return nil
	}
	return &DeletionVector{StorageType: dv.StorageType, PathOrInlineDv: dv.PathOrInlineDv, Offset: dv.Offset, SizeInBytes: dv.SizeInBytes, Cardinality: dv.Cardinality}
}

func deopt(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func actionFromCPRow(r *cpReadRow) (Action, error) {
	var a Action
	if g := r.Add; g != nil {
		add := &Add{
			PartitionValues: g.PartitionValues, Size: g.Size, ModificationTime: g.ModificationTime, DataChange: g.DataChange,
			Stats: deopt(g.Stats), Tags: g.Tags, DeletionVector: fromCPDV(g.DeletionVector), BaseRowID: g.BaseRowID,
			DefaultRowCommitVersion: g.DefaultRowCommitVersion, ClusteringProvider: deopt(g.ClusteringProvider),
		}
		if add.PartitionValues == nil {
			add.PartitionValues = map[string]*string{}
		}
		if err := setLogPath(add, g.Path); err != nil {
			return a, err
		}
		a.Add = add
	}
	if g := r.Remove; g != nil {
		rm := &Remove{
			DeletionTimestamp: g.DeletionTimestamp, DataChange: g.DataChange, ExtendedFileMetadata: g.ExtendedFileMetadata,
			PartitionValues: g.PartitionValues, Size: g.Size, DeletionVector: fromCPDV(g.DeletionVector), BaseRowID: g.BaseRowID,
			DefaultRowCommitVersion: g.DefaultRowCommitVersion,
		}
		if err := setLogPath(rm, g.Path); err != nil {
			return a, err
		}
		a.Remove = rm
	}
	if g := r.MetaData; g != nil {
		md := &Metadata{ID: g.ID, Name: deopt(g.Name), Description: deopt(g.Description), Format: Format{Provider: g.Format.Provider, Options: g.Format.Options},
			SchemaString: g.SchemaString, PartitionColumns: g.PartitionColumns, Configuration: g.Configuration, CreatedTime: g.CreatedTime}
		if md.Configuration == nil {
			md.Configuration = map[string]string{}
		}
		if md.PartitionColumns == nil {
			md.PartitionColumns = []string{}
		}
		a.MetaData = md
	}
	if g := r.Protocol; g != nil {
		a.Protocol = &Protocol{MinReaderVersion: int(g.MinReaderVersion), MinWriterVersion: int(g.MinWriterVersion), ReaderFeatures: g.ReaderFeatures, WriterFeatures: g.WriterFeatures}
	}
	if g := r.Txn; g != nil {
		a.Txn = &Txn{AppID: g.AppID, Version: g.Version, LastUpdated: g.LastUpdated}
	}
	if g := r.DomainMetadata; g != nil {
		a.DomainMetadata = &DomainMetadata{Domain: g.Domain, Configuration: g.Configuration, Removed: g.Removed}
	}
	if g := r.CheckpointMetadata; g != nil {
		a.CheckpointMetadata = &CheckpointMetadata{Version: g.Version, Tags: g.Tags}
	}
	if g := r.Sidecar; g != nil {
		a.Sidecar = &Sidecar{Path: g.Path, SizeInBytes: g.SizeInBytes, ModificationTime: g.ModificationTime, Tags: g.Tags}
	}
	return a, a.validate()
}
