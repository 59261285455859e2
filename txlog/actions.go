package txlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
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

// Schema parses SchemaString. A metaData action without one (the key missing, null or empty,
// as hand-made or truncated logs have) is ErrCorruptLog with a message that says so, rather
// than a JSON parser's "unexpected end of JSON input".
func (m *Metadata) Schema() (*StructType, error) {
	if strings.TrimSpace(m.SchemaString) == "" {
		return nil, fmt.Errorf("%w: the metaData action (table id %q) has no schemaString: the table's schema is missing", ErrCorruptLog, m.ID)
	}
	return ParseSchema(m.SchemaString)
}

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

// Add makes a data file live. Path is the URI-decoded path (the object key relative to the
// table root, or an absolute URI); JSON encoding and decoding convert to and from the URI form
// the log stores, so a Path read from a log is written back byte-for-byte.
type Add struct {
	rawPath                 string
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

// Remove tombstones a data file. Path is URI-decoded, as for Add.
type Remove struct {
	rawPath                 string
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

// CDC is a change-data file; plain readers ignore it. Path is URI-decoded, as for Add.
type CDC struct {
	rawPath         string
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

// decodePath URI-decodes a log path exactly once.
func decodePath(raw string) (string, error) {
	if !strings.Contains(raw, "%") {
		return raw, nil
	}
	p, err := url.PathUnescape(raw)
	if err != nil {
		return "", fmt.Errorf("path %q is not a valid URI: %w", raw, err)
	}
	return p, nil
}

// encodePath renders a decoded path in the URI form the log stores: every byte outside the
// RFC 3986 path characters is percent-encoded (so "%" becomes "%25" and " " becomes "%20").
func encodePath(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// logPath is the URI form to write: the raw form read from the log when it still decodes to
// Path (so other writers' encodings survive a checkpoint), else a fresh encoding.
func logPath(raw, decoded string) string {
	if raw != "" {
		if d, err := decodePath(raw); err == nil && d == decoded {
			return raw
		}
	}
	return encodePath(decoded)
}

// RawPath is the path exactly as the log stores it (URI-encoded).
func (a *Add) RawPath() string { return logPath(a.rawPath, a.Path) }

// RawPath is the path exactly as the log stores it (URI-encoded).
func (r *Remove) RawPath() string { return logPath(r.rawPath, r.Path) }

// MarshalJSON writes Path in URI form.
func (a Add) MarshalJSON() ([]byte, error) {
	c := wireAdd(a)
	c.Path = a.RawPath()
	if c.PartitionValues == nil {
		c.PartitionValues = map[string]*string{}
	}
	return json.Marshal(c)
}

// MarshalJSON writes Path in URI form.
func (r Remove) MarshalJSON() ([]byte, error) {
	c := wireRemove(r)
	c.Path = r.RawPath()
	return json.Marshal(c)
}

// MarshalJSON writes Path in URI form.
func (c CDC) MarshalJSON() ([]byte, error) {
	p := wireCDC(c)
	p.Path = logPath(c.rawPath, c.Path)
	return json.Marshal(p)
}

// UnmarshalJSON decodes Path from its URI form.
func (a *Add) UnmarshalJSON(data []byte) error {
	*a = Add{}
	return unmarshalFileAction(data, (*wireAdd)(a), a)
}

// UnmarshalJSON decodes Path from its URI form.
func (r *Remove) UnmarshalJSON(data []byte) error {
	*r = Remove{}
	return unmarshalFileAction(data, (*wireRemove)(r), r)
}

// UnmarshalJSON decodes Path from its URI form.
func (c *CDC) UnmarshalJSON(data []byte) error {
	*c = CDC{}
	return unmarshalFileAction(data, (*wireCDC)(c), c)
}

// fileAction is a file action (add, remove, cdc): the log stores its path in URI form, and it
// keeps both that raw form and the decoded Path.
type fileAction interface {
	paths() (raw, decoded *string, action string)
}

func (a *Add) paths() (raw, decoded *string, action string)    { return &a.rawPath, &a.Path, "add" }
func (r *Remove) paths() (raw, decoded *string, action string) { return &r.rawPath, &r.Path, "remove" }
func (c *CDC) paths() (raw, decoded *string, action string)    { return &c.rawPath, &c.Path, "cdc" }

// unmarshalFileAction decodes data into plain (f's method-less copy, so this does not recurse)
// and then f's path from its URI form.
func unmarshalFileAction[T any, F interface {
	*T
	fileAction
}](data []byte, plain any, f F) error {
	if err := json.Unmarshal(data, plain); err != nil {
		return err
	}
	return decodeLogPath(f)
}

// decodeLogPath decodes the path of f, decoded from JSON as the log stores it; a nil f is an
// action the line does not have.
func decodeLogPath[T any, F interface {
	*T
	fileAction
}](f F) error {
	if f == nil {
		return nil
	}
	_, stored, _ := f.paths()
	return setLogPath(f, *stored)
}

// setLogPath sets f's path from raw, the form the log stores (URI-encoded); the error names
// the action.
func setLogPath(f fileAction, raw string) error {
	rawField, decoded, action := f.paths()
	p, err := decodePath(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	*rawField, *decoded = raw, p
	return nil
}

// ParseActions parses a commit file (newline-delimited JSON, one action a line). Blank lines
// are skipped; unknown action types and fields are ignored. The error names the 1-based line.
func ParseActions(data []byte) ([]Action, error) {
	var out []Action
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		a, err := parseAction(l)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrCorruptLog, line, err)
		}
		if err := a.validate(); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrCorruptLog, line, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// Method-less copies of the file actions: decoding through them skips the UnmarshalJSON
// methods, which would scan each action a second time (replay decodes millions of adds).
type (
	wireAdd    Add
	wireRemove Remove
	wireCDC    CDC
)

type wireAction struct {
	CommitInfo         *CommitInfo         `json:"commitInfo"`
	Protocol           *Protocol           `json:"protocol"`
	MetaData           *Metadata           `json:"metaData"`
	Add                *wireAdd            `json:"add"`
	Remove             *wireRemove         `json:"remove"`
	Txn                *Txn                `json:"txn"`
	DomainMetadata     *DomainMetadata     `json:"domainMetadata"`
	CDC                *wireCDC            `json:"cdc"`
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata"`
	Sidecar            *Sidecar            `json:"sidecar"`
}

// parseAction decodes one line, URI-decoding file paths once.
func parseAction(line []byte) (Action, error) {
	var w wireAction
	if err := json.Unmarshal(line, &w); err != nil {
		return Action{}, err
	}
	a := Action{
		CommitInfo: w.CommitInfo, Protocol: w.Protocol, MetaData: w.MetaData, Txn: w.Txn,
		DomainMetadata: w.DomainMetadata, CheckpointMetadata: w.CheckpointMetadata, Sidecar: w.Sidecar,
	}
	a.Add, a.Remove, a.CDC = (*Add)(w.Add), (*Remove)(w.Remove), (*CDC)(w.CDC)
	err := decodeLogPath(a.Add)
	if err == nil {
		err = decodeLogPath(a.Remove)
	}
	if err == nil {
		err = decodeLogPath(a.CDC)
	}
	return a, err
}

// validate rejects actions missing the fields replay depends on.
func (a *Action) validate() error {
	switch {
	case a.Add != nil && a.Add.Path == "":
		return fmt.Errorf("add without a path")
	case a.Remove != nil && a.Remove.Path == "":
		return fmt.Errorf("remove without a path")
	case a.Txn != nil && a.Txn.AppID == "":
		return fmt.Errorf("txn without an appId")
	case a.DomainMetadata != nil && a.DomainMetadata.Domain == "":
		return fmt.Errorf("domainMetadata without a domain")
	}
	return nil
}

// MarshalActions renders actions as a commit file: one JSON object a line.
func MarshalActions(actions []Action) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range actions {
		if err := enc.Encode(&actions[i]); err != nil {
			return nil, fmt.Errorf("txlog: encode action %d: %w", i, err)
		}
	}
	return buf.Bytes(), nil
}
