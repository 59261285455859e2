// Package source reads a Delta table as a stream, the way Delta's DeltaSource does: offsets
// (version, index of the file within the version), read limits (files and bytes a batch) and
// the rules for commits that remove data (stop, or skip them when told to). ChangeSource reads
// a table's change data feed the same way (Delta's readChangeFeed): offsets count versions and
// the change files within them, so a consumer sees every insert, delete and update image once.
//
// It reads the table (Source its log, ChangeSource the change rows too) and keeps no state of
// its own: the caller records the offsets it reached (the stream's checkpoint) and asks again
// from there after a crash, and the same offsets give the same files.
package source
