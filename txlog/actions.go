package txlog

import (
	"encoding/json"
)

// Action is one line of a commit file (or one row of a checkpoint): exactly one field is set.
// Unknown action types decode to an Action with every field nil and are ignored on replay.
type Action struct {
	CommitInfo         *CommitInfo         `json:"commitInfo,omitempty"`
	Protocol           *Protocol           `json:"protocol,omitempty"`
	MetaData           *Metadata           `json:"metaData,omitempty"`
	Add                *Add                `json:"add,omitempty"`
	Remove             *Remove             `json:"remove,omitempty"`
	Txn                *Txn                `json:"txn,omitempty"`
	DomainMetadata     *DomainMetadata     `json:"domainMetadata,omitempty"`
	CDC                *CDC                `json:"cdc,omitempty"`
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata,omitempty"`
	Sidecar            *Sidecar            `json:"sidecar,omitempty"`
}

// Protocol is the reader/writer versions and table features.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// Format is metaData.format.
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the metaData action. A later one replaces the whole previous one.
type Metadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
}

// Schema parses SchemaString.
func (m *Metadata) Schema() (*StructType, error) { return ParseSchema(m.SchemaString) }

// DeletionVector is the descriptor of a deletion vector on an add or remove.
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
}

// UniqueID is the DV's identity within a file key: storageType + pathOrInlineDv (+ @offset).
func (dv *DeletionVector) UniqueID() string {
	if dv == nil {
		return ""
	}
	id := dv.StorageType + dv.PathOrInlineDv
	if dv.Offset != nil {
		id += "@" + itoa(int64(*dv.Offset))
	}
	return id
}

// Add makes a data file live.
type Add struct {
	Path                    string             `json:"path"`
	PartitionValues         map[string]*string `json:"partitionValues"`
	Size                    int64              `json:"size"`
	ModificationTime        int64              `json:"modificationTime"`
	DataChange              bool               `json:"dataChange"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider      string             `json:"clusteringProvider,omitempty"`
}

// Remove tombstones a data file.
type Remove struct {
	Path                    string             `json:"path"`
	DeletionTimestamp       *int64             `json:"deletionTimestamp,omitempty"`
	DataChange              bool               `json:"dataChange"`
	ExtendedFileMetadata    bool               `json:"extendedFileMetadata,omitempty"`
	PartitionValues         map[string]*string `json:"partitionValues,omitempty"`
	Size                    *int64             `json:"size,omitempty"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
}

// Txn records the last committed version of an idempotent writer (appId).
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// DomainMetadata is a named configuration blob owned by a writer or a feature.
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	Removed       bool   `json:"removed"`
}

// CDC is a change-data file; plain readers ignore it.
type CDC struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
	Size            int64              `json:"size"`
	DataChange      bool               `json:"dataChange"`
	Tags            map[string]string  `json:"tags,omitempty"`
}

// CheckpointMetadata is the header action of a v2 checkpoint.
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// Sidecar points a v2 checkpoint at a file of add/remove actions under _delta_log/_sidecars/.
type Sidecar struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// CommitInfo is provenance. Values in OperationParameters and OperationMetrics may be of any
// JSON type (Spark writes strings, delta-rs numbers).
type CommitInfo struct {
	Timestamp           int64                      `json:"timestamp,omitempty"`
	InCommitTimestamp   *int64                     `json:"inCommitTimestamp,omitempty"`
	Operation           string                     `json:"operation,omitempty"`
	OperationParameters map[string]json.RawMessage `json:"operationParameters,omitempty"`
	ReadVersion         *int64                     `json:"readVersion,omitempty"`
	IsolationLevel      string                     `json:"isolationLevel,omitempty"`
	IsBlindAppend       *bool                      `json:"isBlindAppend,omitempty"`
	OperationMetrics    map[string]json.RawMessage `json:"operationMetrics,omitempty"`
	UserMetadata        string                     `json:"userMetadata,omitempty"`
	EngineInfo          string                     `json:"engineInfo,omitempty"`
	TxnID               string                     `json:"txnId,omitempty"`
}

func itoa(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
