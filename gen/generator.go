package gen

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// role is what a column means to the workload.
type role uint8

const (
	roleOther role = iota
	roleID
	roleType
	roleAmount
	roleTime
	roleDevice
)

// flaw marks a record with a wrongly typed field.
type flaw uint8

const (
	flawNone flaw = iota
	flawTime
	flawAmount
)

type column struct {
	Column
	role   role
	key    []byte // `"name":`
	prefix []byte // the name reduced to [A-Za-z0-9_-], for string values
	salt   uint64
}

// event is everything needed to render a record again, byte for byte, for a resend.
type event struct {
	seq    uint64
	timeUs int64
	cents  int64
	typ    uint32
	device uint32
	flaw   flaw
	format timeFormat
}

// timeFormat is one of the event-time spellings DESIGN.md §8 says ingest accepts.
type timeFormat uint8

const (
	fmtMicros       timeFormat = iota // 2024-05-01T12:00:00.123456Z (the default)
	fmtSeconds                        // 2024-05-01T12:00:00Z
	fmtMillis                         // 2024-05-01T12:00:00.123Z
	fmtOffset                         // 2024-05-01T14:00:00.123456+02:00
	fmtSpace                          // 2024-05-01 12:00:00.123456, read as UTC
	fmtSpaceSeconds                   // 2024-05-01 12:00:00, read as UTC
	numFormats
)

// offsetMinutes are the zone offsets of fmtOffset, picked by sequence number.
var offsetMinutes = [...]int64{120, -300, 330}

const (
	recentSize    = 1024 // recent events, for ordinary resends
	reservoirSize = 4096 // a uniform sample of the whole run, for late resends
	dayUs         = 86_400_000_000
)

// Generator renders a workload file by file. Generate drives it; it is exported for callers
// that write lines somewhere other than a Bucket (benchmarks, the demo).
type Generator struct {
	o            Options
	r            *rand.Rand
	cols         []column
	salt         uint64
	typeNames    [][]byte // JSON-quoted
	deviceWidth  int
	hasAmount    bool
	idName       string
	files        int
	linesPerFile int64
	file         int
	line         int64
	seq          uint64
	startUs      int64
	usPerLine    float64
	lagBody      *quantiles // log-normal lag body, µs
	amounts      *quantiles // log-normal amounts, cents
	outageEvents int
	mixTimes     bool // TimeFormatMix applies: the event time is a timestamp column
	csv          bool

	burstLeft   int
	burstDevice uint32
	burstBaseUs int64
	burstStepUs float64
	burstIndex  int

	recent    [recentSize]event
	recentN   int
	reservoir [reservoirSize]event
	validN    uint64

	lastDay  int64
	dateText [10]byte

	stats Stats
}

// New checks the options and prepares a generator.
func New(opts Options) (*Generator, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	g := &Generator{
		o:         opts,
		r:         newRand(opts.Seed),
		salt:      mix(uint64(opts.Seed) ^ 0x5eed),
		startUs:   opts.Start.UnixMicro(),
		usPerLine: 1e6 / opts.Rate,
		lagBody:   logNormal(math.Log(float64(opts.LagMedian.Microseconds())), opts.LagSigma),
		amounts:   logNormal(7.6, 0.9), // around 20.00
		lastDay:   math.MinInt64,
		csv:       opts.Format == FormatCSV,
		idName:    "event_id",
	}
	for i, c := range opts.Columns {
		key, _ := json.Marshal(c.Name) // a string always marshals
		col := column{Column: c, key: append(key, ':'), prefix: safeName(c.Name), salt: mix(uint64(i) + 0xc01)}
		switch {
		case c.Name == opts.ID && (c.Kind == "string" || isInt(c.Kind)):
			col.role = roleID
			g.idName = c.Name
		case c.Name == opts.Type && c.Kind == "string":
			col.role = roleType
		case c.Name == opts.Amount && isNumeric(c.Kind):
			col.role = roleAmount
			g.hasAmount = true
		case c.Name == opts.EventTime:
			col.role = roleTime
			g.mixTimes = opts.TimeFormatMix > 0 && c.Kind == "timestamp"
		case c.Name == opts.Device && c.Kind == "string":
			col.role = roleDevice
		}
		g.cols = append(g.cols, col)
	}
	names := []string{"click", "view", "purchase", "signup", "login", "logout", "search", "share"}
	for i := range opts.EventTypes {
		name := "type_" + strconv.Itoa(i)
		if i < len(names) {
			name = names[i]
		}
		g.typeNames = append(g.typeNames, strconv.AppendQuote(nil, name))
	}
	g.deviceWidth = max(5, len(strconv.Itoa(opts.Devices-1)))
	g.outageEvents = opts.OutageEvents
	if g.outageEvents == 0 {
		g.outageEvents = max(1, int(opts.OutageDuration.Seconds()*opts.Rate/float64(opts.Devices)))
	}
	switch {
	case opts.Lines == 0:
	case opts.Files > 0:
		g.files = int(min(int64(opts.Files), opts.Lines))
		g.linesPerFile = (opts.Lines + int64(g.files) - 1) / int64(g.files)
		// Ceiling division can leave trailing files empty (10 lines in 4 files: 3,3,3,1 is
		// fine, 5 in 4: 2,2,1,0 is not); drop them so every object holds lines.
		g.files = int((opts.Lines + g.linesPerFile - 1) / g.linesPerFile)
	default:
		g.linesPerFile = opts.LinesPerFile
		g.files = int((opts.Lines + g.linesPerFile - 1) / g.linesPerFile)
	}
	g.stats.Files = g.files
	return g, nil
}

// safeName keeps a value free of characters JSON or CSV would have to escape.
func safeName(name string) []byte {
	out := []byte(name)
	for i, b := range out {
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-') {
			out[i] = '_'
		}
	}
	return out
}

func isInt(k string) bool {
	return k == "long" || k == "integer" || k == "short" || k == "byte"
}

func isNumeric(k string) bool {
	return isInt(k) || k == "double" || k == "float" || k == "decimal"
}

// More reports whether NextFile has another object to render.
func (g *Generator) More() bool { return g.file < g.files }

// NextFile appends the next object's lines to dst and returns its key and the bytes.
func (g *Generator) NextFile(dst []byte) (string, []byte) {
	end := min(g.o.Lines, g.line+g.linesPerFile)
	key := g.o.objectKey(g.file, g.arrivalUs())
	start := len(dst)
	if g.csv {
		dst = g.appendHeader(dst)
	}
	for g.line < end {
		dst = g.nextLine(dst)
		g.line++
	}
	g.file++
	g.stats.Lines = g.line
	g.stats.Bytes += int64(len(dst) - start)
	g.stats.Keys = append(g.stats.Keys, key)
	return key, dst
}

// Stats describes what has been rendered so far.
func (g *Generator) Stats() Stats {
	s := g.stats
	s.Keys = append([]string(nil), g.stats.Keys...)
	return s
}

func (g *Generator) arrivalUs() int64 {
	return g.startUs + int64(float64(g.line)*g.usPerLine)
}

func (g *Generator) nextLine(dst []byte) []byte {
	arrival := g.arrivalUs()
	if g.burstLeft == 0 && g.o.OutageRate > 0 && g.r.Float64() < g.o.OutageRate {
		g.burstLeft = g.outageEvents
		g.burstIndex = 0
		g.burstDevice = uint32(g.r.IntN(g.o.Devices))
		g.burstBaseUs = arrival - g.o.OutageDuration.Microseconds()
		g.burstStepUs = float64(g.o.OutageDuration.Microseconds()) / float64(g.outageEvents)
		g.stats.Outages++
	}
	if g.burstLeft > 0 {
		// The device buffered its events during the outage and now sends them in order.
		e := g.newEvent(g.burstBaseUs + int64(float64(g.burstIndex)*g.burstStepUs))
		e.device = g.burstDevice
		g.burstLeft--
		g.burstIndex++
		g.stats.OutageEvents++
		return g.emitValid(dst, e)
	}
	o := &g.o
	u := g.r.Float64()
	if u < o.MalformedFraction {
		return g.malformed(dst)
	}
	u -= o.MalformedFraction
	if u < o.DuplicateFraction && g.recentN > 0 {
		var e *event
		if g.r.Float64() < o.LateResendFraction {
			e = &g.reservoir[g.r.IntN(int(min(g.validN, reservoirSize)))]
			g.stats.LateResends++
		} else {
			e = &g.recent[g.r.IntN(min(g.recentN, recentSize))]
		}
		g.stats.Duplicates++
		return g.appendEvent(dst, e)
	}
	u -= o.DuplicateFraction
	if u < o.WrongTypeFraction {
		e := g.newEvent(arrival - g.lagUs())
		e.flaw = flawTime
		if g.hasAmount && g.r.IntN(2) == 0 {
			e.flaw = flawAmount
			g.stats.BadAmount++
		} else {
			g.stats.BadEventTime++
		}
		g.stats.Events++
		return g.appendEvent(dst, &e)
	}
	u -= o.WrongTypeFraction
	if u < o.FutureFraction {
		e := g.newEvent(arrival + o.FutureLag.Microseconds() + g.r.Int64N(3_600_000_000))
		g.stats.Future++
		g.stats.Events++
		return g.appendEvent(dst, &e)
	}
	return g.emitValid(dst, g.newEvent(arrival-g.lagUs()))
}

// newEvent draws a fresh record's keys and amount.
func (g *Generator) newEvent(timeUs int64) event {
	g.seq++
	u := g.r.Float64()
	cents := int64(g.amounts.draw(g.r)) + 1
	e := event{
		seq:    g.seq,
		timeUs: timeUs,
		cents:  min(cents, 99_999_999),
		typ:    uint32(u * u * float64(len(g.typeNames))), // skewed: low types are frequent
		device: uint32(g.r.IntN(g.o.Devices)),
	}
	if g.mixTimes && g.r.Float64() < g.o.TimeFormatMix {
		e.format = timeFormat(1 + g.r.IntN(int(numFormats)-1))
		// The event time is what the line says: a coarser spelling truncates it.
		switch e.format {
		case fmtSeconds, fmtSpaceSeconds:
			e.timeUs = floorDiv(e.timeUs, 1_000_000) * 1_000_000
		case fmtMillis:
			e.timeUs = floorDiv(e.timeUs, 1000) * 1000
		}
		g.stats.MixedTimeFormats++
	}
	return e
}

// lagUs draws arrival minus event time.
func (g *Generator) lagUs() int64 {
	o := &g.o
	if o.TailFraction > 0 && g.r.Float64() < o.TailFraction {
		lag := float64(o.TailScale.Microseconds()) * math.Pow(1-g.r.Float64(), -1/o.TailAlpha)
		return int64(min(lag, float64(o.TailMax.Microseconds())))
	}
	return int64(g.lagBody.draw(g.r))
}

// quantiles is an inverse CDF sampled at quantileN points; draws interpolate between them.
// It replaces math.Exp per draw, the generator's largest cost, and keeps the distribution
// continuous; only the extremes beyond the outer quantiles (|z| > 3.5) are cut off.
type quantiles [quantileN]float64

const quantileN = 4096

func logNormal(mu, sigma float64) *quantiles {
	var q quantiles
	for i := range q {
		p := (float64(i) + 0.5) / quantileN
		// Explicit conversions stop the compiler from fusing multiply-adds (it may on arm64,
		// ppc64 and s390x), so that a seed gives the same bytes on every architecture.
		q[i] = math.Exp(mu + float64(sigma*math.Sqrt2*math.Erfinv(float64(2*p)-1)))
	}
	return &q
}

func (q *quantiles) draw(r *rand.Rand) float64 {
	x := r.Float64() * (quantileN - 1)
	i := int(x)
	return q[i] + float64((x-float64(i))*(q[i+1]-q[i]))
}

// emitValid renders a valid record and remembers it for later resends.
func (g *Generator) emitValid(dst []byte, e event) []byte {
	g.stats.Events++
	t := time.UnixMicro(e.timeUs).UTC()
	if g.validN == 0 || t.Before(g.stats.MinEventTime) {
		g.stats.MinEventTime = t
	}
	if g.validN == 0 || t.After(g.stats.MaxEventTime) {
		g.stats.MaxEventTime = t
	}
	g.recent[g.recentN%recentSize] = e
	g.recentN++
	// Reservoir sampling keeps a uniform sample of every valid event so far.
	if g.validN < reservoirSize {
		g.reservoir[g.validN] = e
	} else if j := g.r.Uint64N(g.validN + 1); j < reservoirSize {
		g.reservoir[j] = e
	}
	g.validN++
	return g.appendEvent(dst, &e)
}

func (g *Generator) malformed(dst []byte) []byte {
	g.stats.Malformed++
	if g.csv {
		// A quote inside an unquoted field is the one CSV error confined to its own line (an
		// unclosed quoted field would run on into the next lines).
		g.stats.InvalidCSV++
		dst = append(dst, "bad-"...)
		dst = strconv.AppendInt(dst, g.line, 10)
		dst = append(dst, `,6" tall,x`...)
		return append(dst, '\n')
	}
	switch g.r.IntN(3) {
	case 0:
		g.stats.InvalidJSON++
		n := strconv.FormatInt(g.line, 10)
		id := strconv.Quote(g.idName)
		var s string
		switch g.r.IntN(4) {
		case 0:
			s = `{` + id + `: "bad-` + n + `", "amount": }`
		case 1:
			s = `{` + g.idName + `: bad-` + n + `}`
		case 2:
			s = `{` + id + `:"bad-` + n + `",}`
		default:
			s = `{` + id + `:"bad-` + n + `" "amount":1}`
		}
		dst = append(dst, s...)
	case 1:
		// A record cut short, as by a writer that died mid-line: without its closing brace
		// no prefix of an object is valid JSON.
		g.stats.Truncated++
		g.seq++
		e := event{seq: g.seq, timeUs: g.arrivalUs(), cents: 100}
		start := len(dst)
		dst = g.appendEvent(dst, &e)
		cut := 1 + g.r.IntN(len(dst)-start-2)
		dst = dst[:start+cut]
	default:
		g.stats.Garbage++
		n := 8 + g.r.IntN(57)
		dst = append(dst, 0xff)
		for range n - 1 {
			b := byte(g.r.Uint32())
			if b == '\n' || b == '\r' {
				b = 0
			}
			dst = append(dst, b)
		}
	}
	return append(dst, '\n')
}

// appendEvent renders one record as a JSON line (columns in declaration order), or as a CSV
// record in header order.
func (g *Generator) appendEvent(dst []byte, e *event) []byte {
	if !g.csv {
		dst = append(dst, '{')
	}
	first := true
	for i := range g.cols {
		c := &g.cols[i]
		if g.csv && !first {
			dst = append(dst, ',')
		}
		var h uint64
		if c.role == roleOther {
			h = mix(e.seq*0x9e3779b97f4a7c15 + c.salt)
			if !c.Required && float64(h>>11)*(1.0/(1<<53)) < g.o.NullFraction {
				if g.csv {
					first = false // an empty field, which is null
					continue
				}
				if h&1 == 0 {
					continue // left out
				}
				if !first {
					dst = append(dst, ',')
				}
				first = false
				dst = append(dst, c.key...)
				dst = append(dst, "null"...)
				continue
			}
		}
		if !g.csv {
			if !first {
				dst = append(dst, ',')
			}
			dst = append(dst, c.key...)
		}
		first = false
		start := len(dst)
		switch c.role {
		case roleID:
			if c.Kind == "string" {
				dst = append(dst, `"evt-`...)
				dst = appendHex16(dst, mix(e.seq^g.salt))
				dst = append(dst, '"')
			} else {
				dst = strconv.AppendUint(dst, e.seq, 10)
			}
		case roleType:
			dst = append(dst, g.typeNames[e.typ]...)
		case roleAmount:
			if e.flaw == flawAmount {
				dst = append(dst, `"n/a"`...)
			} else {
				dst = g.appendNumber(dst, c, e.cents)
			}
		case roleTime:
			if e.flaw == flawTime {
				dst = append(dst, badTimes[e.seq%uint64(len(badTimes))]...)
			} else if e.format != fmtMicros {
				dst = appendEventTime(dst, e)
			} else {
				dst = g.appendTime(dst, c.Kind, e.timeUs)
			}
		case roleDevice:
			dst = append(dst, `"dev-`...)
			dst = appendPadded(dst, uint64(e.device), g.deviceWidth)
			dst = append(dst, '"')
		default:
			dst = g.appendValue(dst, c, e, h)
		}
		if g.csv && dst[start] == '"' {
			// The same value as a CSV field: no value of ours needs quoting in CSV.
			copy(dst[start:], dst[start+1:len(dst)-1])
			dst = dst[:len(dst)-2]
		}
	}
	if g.csv {
		return append(dst, '\n')
	}
	return append(dst, '}', '\n')
}

// appendHeader writes the CSV header line.
func (g *Generator) appendHeader(dst []byte) []byte {
	for i, c := range g.cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		if strings.ContainsAny(c.Name, ",\"\r\n") || strings.TrimSpace(c.Name) != c.Name {
			dst = append(dst, '"')
			dst = append(dst, strings.ReplaceAll(c.Name, `"`, `""`)...)
			dst = append(dst, '"')
			continue
		}
		dst = append(dst, c.Name...)
	}
	return append(dst, '\n')
}

// badTimes are event times no timestamp parser accepts.
var badTimes = []string{`"yesterday"`, `"2024-13-45T25:61:00Z"`, `""`, `true`}

// appendNumber renders a non-negative amount in cents with the column's type.
func (g *Generator) appendNumber(dst []byte, c *column, cents int64) []byte {
	switch c.Kind {
	case "double", "float":
		dst = strconv.AppendInt(dst, cents/100, 10)
		dst = append(dst, '.')
		return append2(dst, int(cents%100))
	case "decimal":
		whole := cents / 100
		if digits := c.Precision - c.Scale; digits < 18 {
			whole %= pow10(digits) // stay within the declared precision
		}
		dst = strconv.AppendInt(dst, whole, 10)
		switch c.Scale {
		case 0:
			return dst
		case 1:
			return append(dst, '.', byte('0'+cents%100/10))
		}
		dst = append(dst, '.')
		dst = append2(dst, int(cents%100))
		for range c.Scale - 2 {
			dst = append(dst, '0')
		}
		return dst
	case "byte":
		return strconv.AppendInt(dst, cents%100, 10)
	case "short":
		return strconv.AppendInt(dst, cents%30000, 10)
	}
	return strconv.AppendInt(dst, cents/100, 10)
}

// appendValue fills a column without a role from h, a hash of the event and the column.
func (g *Generator) appendValue(dst []byte, c *column, e *event, h uint64) []byte {
	switch c.Kind {
	case "string":
		dst = append(dst, '"')
		dst = append(dst, c.prefix...)
		dst = append(dst, '-')
		dst = strconv.AppendUint(dst, h%100, 10)
		return append(dst, '"')
	case "long":
		return strconv.AppendUint(dst, h%1_000_000_000_000, 10)
	case "integer":
		return strconv.AppendUint(dst, h%1_000_000, 10)
	case "short", "byte", "double", "float", "decimal":
		return g.appendNumber(dst, c, int64(h%10_000_000))
	case "boolean":
		return strconv.AppendBool(dst, h&2 != 0)
	case "binary":
		var raw [6]byte
		for i := range raw {
			raw[i] = byte(h >> (8 * i))
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, raw[:])
		return append(dst, '"')
	case "date":
		day := floorDiv(e.timeUs, dayUs) - int64(h%365)
		dst = append(dst, '"')
		dst = appendDate(dst, day)
		return append(dst, '"')
	}
	// timestamp, timestamp_ntz: some moment in the hour before the event.
	return g.appendTime(dst, c.Kind, e.timeUs-int64(h%3_600_000_000))
}

// appendTime renders a timestamp as RFC 3339 UTC with microseconds, or timestamp_ntz as
// "YYYY-MM-DD HH:MM:SS.ffffff".
func (g *Generator) appendTime(dst []byte, kind string, us int64) []byte {
	day := floorDiv(us, dayUs)
	rem := us - day*dayUs
	if day != g.lastDay {
		g.lastDay = day
		appendDate(g.dateText[:0], day)
	}
	dst = append(dst, '"')
	dst = append(dst, g.dateText[:]...)
	if kind == "timestamp_ntz" {
		dst = append(dst, ' ')
	} else {
		dst = append(dst, 'T')
	}
	sec := rem / 1_000_000
	dst = append2(dst, int(sec/3600))
	dst = append(dst, ':')
	dst = append2(dst, int(sec/60%60))
	dst = append(dst, ':')
	dst = append2(dst, int(sec%60))
	dst = append(dst, '.')
	dst = appendPadded(dst, uint64(rem%1_000_000), 6)
	if kind != "timestamp_ntz" {
		dst = append(dst, 'Z')
	}
	return append(dst, '"')
}

// appendEventTime renders an event time in its other spelling (timestamp columns only).
func appendEventTime(dst []byte, e *event) []byte {
	us := e.timeUs
	var off int64
	if e.format == fmtOffset {
		off = offsetMinutes[e.seq%uint64(len(offsetMinutes))]
		us += off * 60_000_000
	}
	day := floorDiv(us, dayUs)
	rem := us - day*dayUs
	sec := rem / 1_000_000
	dst = append(dst, '"')
	dst = appendDate(dst, day)
	if e.format == fmtSpace || e.format == fmtSpaceSeconds {
		dst = append(dst, ' ')
	} else {
		dst = append(dst, 'T')
	}
	dst = append2(dst, int(sec/3600))
	dst = append(dst, ':')
	dst = append2(dst, int(sec/60%60))
	dst = append(dst, ':')
	dst = append2(dst, int(sec%60))
	switch e.format {
	case fmtSeconds:
		dst = append(dst, 'Z')
	case fmtMillis:
		dst = append(dst, '.')
		dst = appendPadded(dst, uint64(rem%1_000_000/1000), 3)
		dst = append(dst, 'Z')
	case fmtOffset:
		dst = append(dst, '.')
		dst = appendPadded(dst, uint64(rem%1_000_000), 6)
		sign := byte('+')
		if off < 0 {
			sign, off = '-', -off
		}
		dst = append(dst, sign)
		dst = append2(dst, int(off/60))
		dst = append(dst, ':')
		dst = append2(dst, int(off%60))
	case fmtSpace:
		dst = append(dst, '.')
		dst = appendPadded(dst, uint64(rem%1_000_000), 6)
	}
	return append(dst, '"')
}

// appendDate renders days since the epoch as YYYY-MM-DD (proleptic Gregorian, years 0-9999).
func appendDate(dst []byte, days int64) []byte {
	// Howard Hinnant's civil_from_days.
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	dst = appendPadded(dst, uint64(min(max(y, 0), 9999)), 4)
	dst = append(dst, '-')
	dst = append2(dst, int(m))
	dst = append(dst, '-')
	return append2(dst, int(d))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

func appendPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for v > 0 || i > len(buf)-width {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[i:]...)
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

const hexDigits = "0123456789abcdef"

func appendHex16(dst []byte, v uint64) []byte {
	var buf [16]byte
	for i := 15; i >= 0; i-- {
		buf[i] = hexDigits[v&15]
		v >>= 4
	}
	return append(dst, buf[:]...)
}

// mix is the splitmix64 finalizer: a bijection on 64 bits, so distinct sequence numbers give
// distinct event ids.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
