package txlog

import (
	"fmt"
	"slices"
	"strings"
)

// Reader features this package (with the table layer) can read. typeWidening: the table layer
// reads files written before a column was widened at its current type; variantType: it reads
// a variant as its JSON text (a shredded one, variantShredding, is refused). Everything else, such
// as catalogManaged (catalogOwned-preview), whose commits a catalog owns, is refused by name.
var supportedReaderFeatures = []string{"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
	"typeWidening", "typeWidening-preview", "variantType", "variantType-preview"}

// Writer features this package can write under: the ones that impose nothing on a writer that
// only adds and removes whole files, or whose rules txlog enforces itself (appendOnly,
// inCommitTimestamp, domainMetadata) or the table layer does (invariants, timestampNtz).
var supportedWriterFeatures = []string{
	"appendOnly", "invariants", "timestampNtz", "deletionVectors", "columnMapping",
	"v2Checkpoint", "vacuumProtocolCheck", "domainMetadata", "inCommitTimestamp", "changeDataFeed",
}

// maxWriterVersion is the highest writer protocol version this package writes under.
const maxWriterVersion = 7

// CheckRead reports whether a snapshot with this protocol and metadata can be read, naming
// the first unsupported version or feature (wrapping ErrUnsupportedFeature).
func CheckRead(p Protocol, m Metadata) error {
	switch p.MinReaderVersion {
	case 1:
	case 2:
		// Reader version 2 means column mapping (name or id mode).
	case 3:
		var bad []string
		for _, f := range p.ReaderFeatures {
			if !slices.Contains(supportedReaderFeatures, f) {
				bad = append(bad, f)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%w: reader features %s", ErrUnsupportedFeature, strings.Join(bad, ", "))
		}
	default:
		return fmt.Errorf("%w: unsupported Delta protocol reader version %d (supported: 1 to 3)", ErrUnsupportedFeature, p.MinReaderVersion)
	}
	switch mode := m.Configuration["delta.columnMapping.mode"]; mode {
	case "", "none", "name", "id":
	default:
		return fmt.Errorf("%w: columnMapping mode %q (supported: none, name, id)", ErrUnsupportedFeature, mode)
	}
	return nil
}

// CheckWrite reports whether this package may commit to a table with this protocol, naming the
// first unsupported writer version or features.
func CheckWrite(p Protocol) error {
	if p.MinWriterVersion > maxWriterVersion || p.MinWriterVersion < 1 {
		return fmt.Errorf("%w: unsupported Delta protocol writer version %d (supported: 1 to %d)", ErrUnsupportedFeature, p.MinWriterVersion, maxWriterVersion)
	}
	var bad []string
	for _, f := range p.WriterFeatures {
		if !slices.Contains(supportedWriterFeatures, f) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: writer features %s", ErrUnsupportedFeature, strings.Join(bad, ", "))
	}
	return nil
}

// HasFeature reports whether the protocol lists a table feature (reader or writer side).
func (p Protocol) HasFeature(name string) bool {
	return slices.Contains(p.ReaderFeatures, name) || slices.Contains(p.WriterFeatures, name)
}
