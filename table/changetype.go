package table

// ChangeType is a change row's _change_type.
//
// Provisional: helper cdfread's table/changes.go defines the same type for the reader; this
// file goes when that lands.
type ChangeType string

// The change types of the Delta protocol's change data files.
const (
	ChangeInsert    ChangeType = "insert"
	ChangeDelete    ChangeType = "delete"
	ChangePreimage  ChangeType = "update_preimage"
	ChangePostimage ChangeType = "update_postimage"
)
