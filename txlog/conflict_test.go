package txlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestConflictMatrix runs the conflict checks of testdata/conflicts: each case is two
// transactions on the same snapshot, the winner commits first, and the case says whether ours
// then commits or conflicts, and how. A new case is a text edit; `go test ./txlog -run
// TestConflictMatrix -rewrite` rewrites the expected results (check the diff).
func TestConflictMatrix(t *testing.T) {
	datadriven.RunTest(t, "testdata/conflicts", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "conflict" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		return runConflictCase(t, d)
	})
}

// conflictSentinels name the error a conflicting case reports, most specific first.
var conflictSentinels = []struct {
	name string
	err  error
}{
	{"ConcurrentAppend", ErrConcurrentAppend},
	{"ConcurrentDeleteRead", ErrConcurrentDeleteRead},
	{"ConcurrentDeleteDelete", ErrConcurrentDeleteDelete},
	{"MetadataChanged", ErrMetadataChanged},
	{"ProtocolChanged", ErrProtocolChanged},
	{"ConcurrentTransaction", ErrConcurrentTransaction},
}

func runConflictCase(t *testing.T, d *datadriven.TestData) string {
	ctx := context.Background()
	isolation := Serializable
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "unpartitioned":
		case "isolation":
			isolation = IsolationLevel(a.SingleVal(t))
			if isolation != Serializable && isolation != WriteSerializable {
				d.Fatalf(t, "isolation %q: want Serializable or WriteSerializable", isolation)
			}
		default:
			d.Fatalf(t, "unknown argument %q", a.Key)
		}
	}
	l := fastLog(mem.New(), Options{})
	createTableWith(t, l, !d.HasArg("unpartitioned"), nil, domainProtocol)
	base := l.Begin(mustSnapshot(t, l))
	base.Add(fileAdd("a", "1"), fileAdd("b", "2"))
	if _, err := base.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
		t.Fatal(err)
	}
	read := mustSnapshot(t, l)
	ours, winner := l.Begin(read), l.Begin(read)
	ours.SetIsolation(isolation)
	for i, line := range strings.Split(d.Input, "\n") {
		who, op, ok := strings.Cut(strings.TrimSpace(line), ":")
		if strings.TrimSpace(line) == "" {
			continue
		}
		var tx *Transaction
		switch {
		case ok && who == "ours":
			tx = ours
		case ok && who == "winner":
			tx = winner
		default:
			d.Fatalf(t, "input line %d: %q: want \"ours: OP\" or \"winner: OP\"", i+1, line)
		}
		if err := applyConflictOp(tx, strings.Fields(op)); err != nil {
			d.Fatalf(t, "input line %d: %q: %v", i+1, line, err)
		}
	}
	if _, err := winner.Commit(ctx, Operation{Name: "WINNER"}); err != nil {
		t.Fatalf("winner: %v", err)
	}
	v, err := ours.Commit(ctx, Operation{Name: "OURS"})
	latest := mustSnapshot(t, l).Version()
	if err == nil {
		return fmt.Sprintf("committed version %d (latest %d)", v, latest)
	}
	name := "error"
	if errors.Is(err, ErrConflict) {
		name = "conflict"
		for _, s := range conflictSentinels {
			if errors.Is(err, s.err) {
				name = s.name
				break
			}
		}
	}
	return fmt.Sprintf("%s (latest %d)\n%v", name, latest, err)
}

// applyConflictOp applies one operation of a case to a transaction. Every file is in the
// partition day=1 unless day=D says otherwise; dataChange is true unless dataChange=false.
//
//	add PATH [day=D] [dataChange=false]    remove PATH [dataChange=false]
//	read-files PATH...                     read-whole-table
//	read-predicate day=D [opaque]          (opaque: no partition matcher, so any add matches)
//	set-txn APPID VERSION                  set-domain DOMAIN CONFIG
//	set-metadata KEY=VALUE...              set-protocol READER WRITER [WRITER-FEATURE...]
func applyConflictOp(tx *Transaction, f []string) error {
	if len(f) == 0 {
		return errors.New("no operation")
	}
	op, args := f[0], f[1:]
	opts := map[string]string{}
	var pos []string
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			opts[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	dataChange := opts["dataChange"] != "false"
	day := opts["day"]
	if day == "" {
		day = "1"
	}
	switch op {
	case "add":
		if len(pos) != 1 {
			return errors.New("add PATH [day=D] [dataChange=false]")
		}
		a := fileAdd(pos[0], day)
		a.DataChange = dataChange
		tx.Add(a)
	case "remove":
		if len(pos) != 1 {
			return errors.New("remove PATH [dataChange=false]")
		}
		tx.Remove(&Remove{Path: pos[0], DataChange: dataChange})
	case "read-files":
		if len(pos) == 0 {
			return errors.New("read-files PATH...")
		}
		tx.ReadFiles(pos...)
	case "read-whole-table":
		tx.ReadWholeTable()
	case "read-predicate":
		if opts["day"] == "" {
			return errors.New("read-predicate day=D [opaque]")
		}
		var match func(map[string]*string) bool
		switch {
		case len(pos) == 1 && pos[0] == "opaque":
		case len(pos) == 0:
			match = func(pv map[string]*string) bool { return pv["day"] != nil && *pv["day"] == day }
		default:
			return errors.New("read-predicate day=D [opaque]")
		}
		tx.ReadPredicate("day = '"+day+"'", match)
	case "set-txn":
		if len(pos) != 2 {
			return errors.New("set-txn APPID VERSION")
		}
		v, err := strconv.ParseInt(pos[1], 10, 64)
		if err != nil {
			return err
		}
		tx.SetTxn(pos[0], v)
	case "set-domain":
		if len(pos) != 2 {
			return errors.New("set-domain DOMAIN CONFIG")
		}
		tx.SetDomain(DomainMetadata{Domain: pos[0], Configuration: pos[1]})
	case "set-metadata":
		delete(opts, "dataChange")
		tx.SetMetadata(Metadata{SchemaString: testSchema, PartitionColumns: []string{"day"}, Configuration: opts})
	case "set-protocol":
		if len(pos) < 2 {
			return errors.New("set-protocol READER WRITER [WRITER-FEATURE...]")
		}
		r, err1 := strconv.Atoi(pos[0])
		w, err2 := strconv.Atoi(pos[1])
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		tx.SetProtocol(Protocol{MinReaderVersion: r, MinWriterVersion: w, WriterFeatures: pos[2:]})
	default:
		return fmt.Errorf("unknown operation %q", op)
	}
	return nil
}
