package bronze

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/bronze/timefmt"
)

var testFields = []Field{
	{Name: "event_id", Kind: KindString},
	{Name: "event_type", Kind: KindString},
	{Name: "amount", Kind: KindDouble},
	{Name: "event_time", Kind: KindTimestamp},
	{Name: "n", Kind: KindLong},
	{Name: "small", Kind: KindShort},
	{Name: "ok", Kind: KindBoolean},
	{Name: "day", Kind: KindDate},
	{Name: "price", Kind: KindDecimal, Precision: 5, Scale: 2},
	{Name: "blob", Kind: KindBinary},
}

// oracleCell is what encoding/json, an independent parser, says a declared cell should hold.
type oracleCell struct {
	valid bool
	str   string
	num   float64
	i     int64
	b     bool
}

type oracleLine struct {
	cells   map[string]oracleCell
	rescued map[string]json.RawMessage // key -> raw values, in order of appearance
	keys    []string
}

// oracle walks the top-level object with encoding/json's tokenizer so key order and repeated
// keys are kept, then applies the typing rules as the design states them.
func oracle(t *testing.T, line []byte) (*oracleLine, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false
	}
	out := &oracleLine{cells: map[string]oracleCell{}, rescued: map[string]json.RawMessage{}}
	kinds := map[string]Kind{}
	for _, f := range testFields {
		kinds[f.Name] = f.Kind
	}
	taken := map[string]bool{} // the first non-null value that fits takes a key; see Parse
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		kind, declared := kinds[key]
		if !declared || taken[key] {
			out.rescued[key+"#"+strconv.Itoa(len(out.keys))] = raw
			out.keys = append(out.keys, key)
			continue
		}
		cell, fits := typeCell(kind, raw)
		taken[key] = fits && cell.valid
		if !fits {
			out.rescued[key+"#"+strconv.Itoa(len(out.keys))] = raw
			out.keys = append(out.keys, key)
			continue
		}
		out.cells[key] = cell
	}
	return out, true
}

func typeCell(kind Kind, raw json.RawMessage) (oracleCell, bool) {
	if string(raw) == "null" {
		return oracleCell{}, true
	}
	var s string
	isStr := json.Unmarshal(raw, &s) == nil && raw[0] == '"'
	switch kind {
	case KindString:
		return oracleCell{valid: true, str: s}, isStr
	case KindBoolean:
		var b bool
		if raw[0] != 't' && raw[0] != 'f' || json.Unmarshal(raw, &b) != nil {
			return oracleCell{}, false
		}
		return oracleCell{valid: true, b: b}, true
	case KindDouble:
		var f float64
		if raw[0] == '"' || raw[0] == '[' || raw[0] == '{' || raw[0] == 't' || raw[0] == 'f' || json.Unmarshal(raw, &f) != nil {
			return oracleCell{}, false
		}
		return oracleCell{valid: true, num: f}, true
	case KindLong, KindShort:
		txt := string(raw)
		if strings.ContainsAny(txt, ".eE\"[{tf") {
			return oracleCell{}, false
		}
		n, err := strconv.ParseInt(txt, 10, 64)
		if err != nil || (kind == KindShort && (n < math.MinInt16 || n > math.MaxInt16)) {
			return oracleCell{}, false
		}
		return oracleCell{valid: true, i: n}, true
	case KindTimestamp:
		if !isStr {
			return oracleCell{}, false
		}
		us, err := ParseTimestampMicros([]byte(s)) // tested on its own against time.Parse
		return oracleCell{valid: true, i: us}, err == nil
	case KindDate:
		if !isStr {
			return oracleCell{}, false
		}
		d, ok := timefmt.ParseDate([]byte(s))
		return oracleCell{valid: true, i: d}, ok
	case KindDecimal:
		text := string(raw)
		if isStr {
			text = s
		} else if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return oracleCell{}, false
		}
		r, ok := new(big.Rat).SetString(text)
		if !ok || !plainDecimalRE.MatchString(text) {
			return oracleCell{}, false
		}
		r.Mul(r, big.NewRat(100, 1))
		if !r.IsInt() || new(big.Int).Abs(r.Num()).Cmp(big.NewInt(100000)) >= 0 {
			return oracleCell{}, false
		}
		return oracleCell{valid: true, str: r.Num().String()}, true
	case KindBinary:
		if !isStr {
			return oracleCell{}, false
		}
		b, err := base64.StdEncoding.DecodeString(s)
		return oracleCell{valid: true, str: string(b)}, err == nil
	}
	return oracleCell{}, false
}

var plainDecimalRE = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,4})?$`)

func checkAgainstOracle(t *testing.T, p *LineParser, line []byte) {
	t.Helper()
	err := p.Parse(line)
	want, ok := oracle(t, line)
	validJSON := json.Valid(line)
	if err != nil {
		var le *LineError
		if !errors.As(err, &le) {
			t.Fatalf("%q: error %v is not a *LineError", line, err)
		}
		if ok && validJSON && utf8.Valid(line) && le.Reason != ReasonTooDeep {
			t.Fatalf("%q: rejected (%v) but encoding/json reads it as an object", line, err)
		}
		return
	}
	if !ok || !validJSON {
		t.Fatalf("%q: accepted but encoding/json says it is not a valid object", line)
	}
	if !utf8.Valid(line) {
		t.Fatalf("%q: accepted with invalid UTF-8", line)
	}
	for i, f := range testFields {
		got := p.Value(i)
		exp := want.cells[f.Name]
		if got.Valid != exp.valid {
			t.Fatalf("%q: %s valid=%v, oracle %v", line, f.Name, got.Valid, exp.valid)
		}
		if !got.Valid {
			continue
		}
		switch f.Kind {
		case KindDecimal:
			if got.Dec.BigInt().String() != exp.str {
				t.Fatalf("%q: %s=%s, oracle %s", line, f.Name, got.Dec.BigInt(), exp.str)
			}
		case KindString, KindBinary:
			if string(p.Str(i)) != exp.str {
				t.Fatalf("%q: %s=%q, oracle %q", line, f.Name, p.Str(i), exp.str)
			}
		case KindDouble:
			if got.Float != exp.num {
				t.Fatalf("%q: %s=%v, oracle %v", line, f.Name, got.Float, exp.num)
			}
		case KindBoolean:
			if got.Bool != exp.b {
				t.Fatalf("%q: %s=%v, oracle %v", line, f.Name, got.Bool, exp.b)
			}
		default:
			if got.Int != exp.i {
				t.Fatalf("%q: %s=%d, oracle %d", line, f.Name, got.Int, exp.i)
			}
		}
	}
	// Nothing lost: every key that did not fit is in the rescued object, in order, verbatim.
	resc := p.Rescued()
	if len(want.keys) == 0 {
		if resc != nil {
			t.Fatalf("%q: rescued %s, oracle rescues nothing", line, resc)
		}
		return
	}
	dec := json.NewDecoder(bytes.NewReader(resc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q: rescued data %q is not an object", line, resc)
	}
	for n, key := range want.keys {
		kt, err := dec.Token()
		if err != nil || kt.(string) != key {
			t.Fatalf("%q: rescued key %d = %v (%v), oracle %q", line, n, kt, err, key)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("%q: rescued value of %q: %v", line, key, err)
		}
		if !bytes.Equal(bytes.TrimSpace(raw), bytes.TrimSpace(want.rescued[key+"#"+strconv.Itoa(n)])) {
			t.Fatalf("%q: rescued %q=%s, oracle %s", line, key, raw, want.rescued[key+"#"+strconv.Itoa(n)])
		}
	}
	if dec.More() {
		t.Fatalf("%q: rescued data %s has extra keys", line, resc)
	}
}

var corpus = []string{
	`{"event_id":"e1","event_type":"click","amount":12.5,"event_time":"2024-05-01T12:07:00Z"}`,
	`  {"event_id" : "e2" , "amount" : -3 , "event_time":"2024-05-01 12:07:00.123456"}  `,
	`{}`,
	`{"event_id":null,"amount":null}`,
	`{"event_id":null,"event_id":"e1","amount":"x","amount":2,"amount":3}`,
	`{"event_id":"caf\u00e9 \"q\" \\ \/ \n\t","event_type":"\ud83d\ude00"}`,
	`{"event_id":"lone \ud800 surrogate"}`,
	`{"event_id":42,"amount":"12.5","ok":"true","n":1.0}`,
	`{"event_id":{"nested":[1,2,{"a":null}]},"extra":[true,false],"more":{"x":"y"}}`,
	`{"event_id":"a","event_id":"b"}`,
	`{"n":9223372036854775807,"small":32767}`,
	`{"n":9223372036854775808,"small":32768}`,
	`{"amount":1e308,"n":-0}`,
	`{"amount":1e400}`,
	`{"event_time":"yesterday","day":"2024-02-30"}`,
	`{"day":"2024-02-29","ok":true}`,
	`{"unicode key é":"ü"}`,
	`{"price":123.45,"blob":"aGVsbG8="}`,
	`{"price":"-999.99","blob":"not base64!"}`,
	`{"price":1000.00,"blob":""}`,
	`{"price":1.005}`,
	`{"price":1e2}`,
	`{"price":"12,5"}`,
	`{"price":"1/2"}`,
	`{"price":"+1.5"}`,
	`{"price":".5"}`,
	`{"price":"5."}`,
	`{"price":"1e99999"}`,
	`{"event_id":"e1"`,
	`{"event_id":"e1",}`,
	`{"event_id":"e1"} trailing`,
	`[1,2,3]`,
	`"just a string"`,
	``,
	`   `,
	`{"event_id":"bad` + "\xff" + `utf8"}`,
	`{"event_id":"ctl` + "\x01" + `char"}`,
	"\x00\x01\x02binary",
	`{"amount":01}`,
	`{"amount":.5}`,
	`{"amount":-}`,
	`{"ok":tru}`,
	`{"event_id":"x","amount":NaN}`,
	`{"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
	`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
}

func TestLineParserCorpus(t *testing.T) {
	p, err := NewLineParser(testFields)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range corpus {
		checkAgainstOracle(t, p, []byte(line))
	}
}

func TestLineParserReasons(t *testing.T) {
	p, _ := NewLineParser(testFields)
	for _, tc := range []struct{ line, reason string }{
		{`[1]`, ReasonNotObject},
		{``, ReasonNotObject},
		{`{"a":1`, ReasonInvalidJSON},
		{"{\"a\":\"\xff\"}", ReasonInvalidUTF8},
		{"\xff\xfe", ReasonInvalidUTF8},
		{`{"a":` + strings.Repeat("[", 600), ReasonTooDeep},
	} {
		err := p.Parse([]byte(tc.line))
		var le *LineError
		if !errors.As(err, &le) || le.Reason != tc.reason {
			t.Errorf("%q: got %v, want reason %s", tc.line, err, tc.reason)
		}
	}
}

func FuzzLineParser(f *testing.F) {
	for _, line := range corpus {
		f.Add([]byte(line))
	}
	p, _ := NewLineParser(testFields)
	f.Fuzz(func(t *testing.T, line []byte) {
		checkAgainstOracle(t, p, line)
	})
}

func BenchmarkLineParser(b *testing.B) {
	line := []byte(`{"event_id":"3f2a9c1e-77aa-4c1b-9d0e-8a1b2c3d4e5f","event_type":"purchase","amount":1234.56,"event_time":"2024-05-01T12:07:00.123456Z","device":"dev-0042"}`)
	p, _ := NewLineParser(testFields[:4])
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Parse(line); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLineParserDuplicateKeys: the first non-null value of the column's type wins; nulls and
// values of the wrong type do not take the key, and every other occurrence is rescued.
func TestLineParserDuplicateKeys(t *testing.T) {
	p, _ := NewLineParser(testFields)
	for _, tc := range []struct {
		line, id, rescued string // id "" means a null event_id
	}{
		{`{"event_id":null,"event_id":"e1"}`, "e1", ""},
		{`{"event_id":"e1","event_id":"e2"}`, "e1", `{"event_id":"e2"}`},
		{`{"event_id":"e1","event_id":null}`, "e1", `{"event_id":null}`},
		{`{"event_id":null,"event_id":null}`, "", ""},
		{`{"event_id":7,"event_id":"e1"}`, "e1", `{"event_id":7}`},
		{`{"event_id":null,"event_id":"e1","event_id":"e2"}`, "e1", `{"event_id":"e2"}`},
	} {
		if err := p.Parse([]byte(tc.line)); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		id := ""
		if p.Value(0).Valid {
			id = string(p.Str(0))
		}
		if id != tc.id || string(p.Rescued()) != tc.rescued {
			t.Errorf("%s: event_id %q, rescued %s; want %q, %s", tc.line, id, p.Rescued(), tc.id, tc.rescued)
		}
	}
}

// TestHasSpecialByte checks the word-at-a-time test against the byte table: every byte value
// at every position of words of otherwise plain bytes, and random words.
func TestHasSpecialByte(t *testing.T) {
	word := func(b [8]byte) uint64 { return binary.LittleEndian.Uint64(b[:]) }
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			var b [8]byte
			for i := range b {
				b[i] = 'a'
			}
			b[pos] = byte(c)
			if got := hasSpecialByte(word(b)); got != stringSpecial[c] {
				t.Fatalf("byte %#x at %d: %v, want %v", c, pos, got, stringSpecial[c])
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 200000; n++ {
		var b [8]byte
		want := false
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				b[i] = byte(0x20 + rng.IntN(0x60)) // mostly plain ASCII
			}
			want = want || stringSpecial[b[i]]
		}
		if got := hasSpecialByte(word(b)); got != want {
			t.Fatalf("%q: %v, want %v", b[:], got, want)
		}
	}
}

// TestLineParserKeyOrderChanges: the parser guesses each key's field from the line before;
// lines whose keys come in other orders, or with undeclared keys in between, parse the same.
func TestLineParserKeyOrderChanges(t *testing.T) {
	p, _ := NewLineParser(testFields[:4])
	lines := []string{
		`{"event_id":"a","event_type":"t","amount":1,"event_time":"2024-05-01T12:07:00Z"}`,
		`{"event_time":"2024-05-01T12:07:00Z","amount":2,"event_type":"u","event_id":"b"}`,
		`{"x":1,"event_id":"c","event_type":"v","amount":3,"event_time":"2024-05-01T12:07:00Z"}`,
		`{"event_id":"d","x":1,"event_type":"w","amount":4,"event_time":"2024-05-01T12:07:00Z"}`,
		`{"event_id":"e","event_type":"z","amount":5,"event_time":"2024-05-01T12:07:00Z"}`,
	}
	for i, l := range lines {
		if err := p.Parse([]byte(l)); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		id, typ, amount := string(p.Str(0)), string(p.Str(1)), p.Value(2).Float
		want := []string{"a", "b", "c", "d", "e"}[i]
		if id != want || typ == "" || amount != float64(i+1) {
			t.Errorf("%s: id %q type %q amount %v", l, id, typ, amount)
		}
		if (i == 2 || i == 3) != (string(p.Rescued()) == `{"x":1}`) {
			t.Errorf("%s: rescued %s", l, p.Rescued())
		}
	}
}
