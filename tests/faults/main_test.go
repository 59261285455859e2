package faults

import (
	"os"
	"testing"

	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

func TestMain(m *testing.M) { os.Exit(lakecheck.Main(m)) }
