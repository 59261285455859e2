package sqlexpr

import (
	"fmt"
	"sort"
	"strings"

	"github.com/medallion-lake/medallion/internal/textdist"
)

// The function registry: every function name the parser accepts, its argument counts and
// its aliases. Binding (sqlfuncbind.go) dispatches on the canonical name.

// funcArity is how many arguments a function takes: min to max (max -1: no bound).
type funcArity struct {
	min, max int
	canon    string // the canonical name an alias stands for; "" for itself
}

// sqlFuncs are the functions the language knows.
var sqlFuncs = map[string]funcArity{
	// strings
	"length": {1, 1, ""}, "char_length": {1, 1, "length"}, "character_length": {1, 1, "length"},
	"lower": {1, 1, ""}, "lcase": {1, 1, "lower"}, "upper": {1, 1, ""}, "ucase": {1, 1, "upper"},
	"trim": {1, 1, ""}, "ltrim": {1, 1, ""}, "rtrim": {1, 1, ""},
	"substr": {2, 3, ""}, "substring": {2, 3, "substr"}, "left": {2, 2, ""}, "right": {2, 2, ""},
	"concat": {0, -1, ""}, "concat_ws": {1, -1, ""}, "replace": {2, 3, ""},
	"regexp_replace": {3, 4, ""}, "regexp_extract": {2, 3, ""}, "rlike": {2, 2, ""},
	"regexp_like": {2, 2, "rlike"}, "split_part": {3, 3, ""}, "lpad": {2, 3, ""}, "rpad": {2, 3, ""},
	"initcap": {1, 1, ""}, "reverse": {1, 1, ""}, "instr": {2, 2, ""}, "locate": {2, 3, ""},
	"position": {2, 3, "locate"}, "repeat": {2, 2, ""}, "translate": {3, 3, ""},
	"startswith": {2, 2, ""}, "endswith": {2, 2, ""}, "contains": {2, 2, ""},
	// null handling and choice
	"coalesce": {1, -1, ""}, "nvl": {2, 2, "coalesce"}, "ifnull": {2, 2, "coalesce"},
	"nullif": {2, 2, ""}, "nvl2": {3, 3, ""}, "if": {3, 3, ""},
	"greatest": {2, -1, ""}, "least": {2, -1, ""},
	// numbers
	"abs": {1, 1, ""}, "round": {1, 2, ""}, "bround": {1, 2, ""}, "floor": {1, 1, ""},
	"ceil": {1, 1, ""}, "ceiling": {1, 1, "ceil"}, "pow": {2, 2, ""}, "power": {2, 2, "pow"},
	"sqrt": {1, 1, ""}, "exp": {1, 1, ""}, "ln": {1, 1, ""}, "log": {1, 2, ""}, "log10": {1, 1, ""},
	"log2": {1, 1, ""}, "mod": {2, 2, ""}, "pmod": {2, 2, ""}, "sign": {1, 1, "signum"},
	"signum": {1, 1, ""},
	// dates and timestamps
	"to_date": {1, 2, ""}, "to_timestamp": {1, 2, ""}, "date_trunc": {2, 2, ""}, "trunc": {2, 2, ""},
	"year": {1, 1, ""}, "quarter": {1, 1, ""}, "month": {1, 1, ""}, "day": {1, 1, ""},
	"dayofmonth": {1, 1, "day"}, "hour": {1, 1, ""}, "minute": {1, 1, ""}, "second": {1, 1, ""},
	"dayofweek": {1, 1, ""}, "dayofyear": {1, 1, ""}, "weekofyear": {1, 1, ""},
	"date_add": {2, 2, ""}, "date_sub": {2, 2, ""}, "datediff": {2, 2, ""},
	"unix_timestamp": {0, 2, ""}, "from_unixtime": {1, 2, ""},
	"timestamp_seconds": {1, 1, ""}, "timestamp_millis": {1, 1, ""}, "timestamp_micros": {1, 1, ""},
	"unix_seconds": {1, 1, ""}, "unix_millis": {1, 1, ""}, "unix_micros": {1, 1, ""},
	"unix_date": {1, 1, ""}, "date_from_unix_date": {1, 1, ""},
	"current_timestamp": {0, 0, ""},
	// JSON
	"get_json_object": {2, 2, ""}, "from_json": {2, 2, ""},
}

// nondeterministic are Spark functions the language refuses: their value depends on when or
// where they run, so a replay would not give the same table. (current_timestamp stays, for
// expectations that compare with the batch's time; Program.Deterministic tells it apart.)
var nondeterministic = map[string]bool{"current_date": true, "curdate": true, "current_timezone": true,
	"localtimestamp": true, "rand": true, "random": true, "randn": true, "uuid": true, "shuffle": true,
	"monotonically_increasing_id": true, "spark_partition_id": true, "input_file_name": true,
	"current_user": true, "user": true, "session_user": true, "current_database": true, "current_schema": true,
	"current_catalog": true}

// unknownFunction is the parse error for a name outside sqlFuncs: a refused
// non-deterministic function says so; another names its nearest known functions.
func unknownFunction(t token) error {
	name := strings.ToLower(t.text)
	if nondeterministic[name] {
		return &SQLError{Pos: t.pos, Found: "function " + name, Expected: "a deterministic function (" + name +
			" depends on when or where it runs, so a replay would not reproduce its result)"}
	}
	return &SQLError{Pos: t.pos, Found: "unknown function " + shortenSQL(t.text), Expected: "a known function" + nearFunctions(name)}
}

// nearFunctions lists up to five known names within a small edit distance of name (or that
// contain it), as " (did you mean a, b?)"; "" when none is near.
func nearFunctions(name string) string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	limit := 1 + len(name)/4
	for f := range sqlFuncs {
		d := textdist.Distance(name, f)
		if len(name) >= 3 && (strings.Contains(f, name) || strings.Contains(name, f) && len(f) >= 3) {
			d = min(d, limit)
		}
		if d <= limit {
			cs = append(cs, cand{f, d})
		}
	}
	if len(cs) == 0 {
		return ""
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	names := make([]string, 0, 5)
	for _, c := range cs[:min(len(cs), 5)] {
		names = append(names, c.name)
	}
	return fmt.Sprintf(" (did you mean %s?)", strings.Join(names, ", "))
}
