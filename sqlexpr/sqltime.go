package sqlexpr

import (
	"math"
	"math/big"
	"strings"
	"time"
)

// Date and timestamp functions, in UTC (the session time zone the pipeline uses): dates are
// days since the epoch, timestamps microseconds since it.

const (
	usPerSec = int64(1e6)
	usPerDay = 86400 * usPerSec
)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func dayTime(days int64) time.Time { return time.Unix(days*86400, 0).UTC() }

func civilDays(y int, m time.Month, d int) int64 {
	return floorDiv(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), 86400)
}

// datePart is one field of a date, as Spark's year, quarter, month, day, dayofweek (1 is
// Sunday), dayofyear and weekofyear (ISO 8601 weeks).
func datePart(name string, days int64) int64 {
	t := dayTime(days)
	switch name {
	case "year":
		return int64(t.Year())
	case "quarter":
		return int64(t.Month()+2) / 3
	case "month":
		return int64(t.Month())
	case "day":
		return int64(t.Day())
	case "dayofweek":
		return int64(t.Weekday()) + 1
	case "dayofyear":
		return int64(t.YearDay())
	}
	_, w := t.ISOWeek()
	return int64(w)
}

// truncDate is Spark's trunc(date, fmt): the first day of the year, quarter, month or week
// (Monday); ok is false for another unit (Spark's NULL).
func truncDate(days int64, unit string) (int64, bool) {
	t := dayTime(days)
	switch strings.ToUpper(unit) {
	case "YEAR", "YYYY", "YY":
		return civilDays(t.Year(), 1, 1), true
	case "QUARTER":
		return civilDays(t.Year(), (t.Month()-1)/3*3+1, 1), true
	case "MONTH", "MM", "MON":
		return civilDays(t.Year(), t.Month(), 1), true
	case "WEEK":
		return days - (int64(t.Weekday())+6)%7, true
	}
	return 0, false
}

// truncTimestamp is Spark's date_trunc(fmt, ts).
func truncTimestamp(us int64, unit string) (int64, bool) {
	step := int64(0)
	switch strings.ToUpper(unit) {
	case "DAY", "DD":
		step = usPerDay
	case "HOUR":
		step = 3600 * usPerSec
	case "MINUTE":
		step = 60 * usPerSec
	case "SECOND":
		step = usPerSec
	case "MILLISECOND":
		step = 1000
	case "MICROSECOND":
		return us, true
	default:
		d, ok := truncDate(floorDiv(us, usPerDay), unit)
		return d * usPerDay, ok
	}
	return floorDiv(us, step) * step, true
}

func bindTimeCall(ca *callArgs) (enode, bool, error) {
	name := ca.c.name
	switch name {
	case "year", "quarter", "month", "day", "dayofweek", "dayofyear", "weekofyear", "unix_date":
		d, err := ca.date(0)
		if err != nil {
			return nil, true, err
		}
		return intFn(sqlType{k: kInt}, []enode{d}, func(r int, v []*vec) (int64, bool) {
			if name == "unix_date" {
				return v[0].i[r], true
			}
			return datePart(name, v[0].i[r]), true
		}), true, nil
	case "hour", "minute", "second", "unix_seconds", "unix_millis", "unix_micros":
		ts, err := ca.timestamp(0)
		if err != nil {
			return nil, true, err
		}
		t := sqlType{k: kInt}
		if strings.HasPrefix(name, "unix_") {
			t = sqlType{k: kLong}
		}
		return intFn(t, []enode{ts}, func(r int, v []*vec) (int64, bool) {
			us := v[0].i[r]
			switch name {
			case "hour":
				return floorDiv(us, 3600*usPerSec) - floorDiv(us, usPerDay)*24, true
			case "minute":
				return floorDiv(us, 60*usPerSec) - floorDiv(us, 3600*usPerSec)*60, true
			case "second":
				return floorDiv(us, usPerSec) - floorDiv(us, 60*usPerSec)*60, true
			case "unix_seconds":
				return floorDiv(us, usPerSec), true
			case "unix_millis":
				return floorDiv(us, 1000), true
			}
			return us, true
		}), true, nil
	case "date_add", "date_sub", "datediff", "trunc", "date_trunc", "date_from_unix_date":
		e, err := bindDateArith(ca)
		return e, true, err
	case "to_date", "to_timestamp", "unix_timestamp", "from_unixtime":
		e, err := bindTimeParse(ca)
		return e, true, err
	case "timestamp_seconds", "timestamp_millis", "timestamp_micros":
		e, err := bindFromEpoch(ca)
		return e, true, err
	case "current_timestamp":
		return &nowNode{}, true, nil
	}
	return nil, false, nil
}

// date is argument i as a date: a timestamp's day (UTC), a string cast (NULL when it is no
// date).
func (ca *callArgs) date(i int) (enode, error) {
	a := ca.args[i]
	switch a.typ().k {
	case kDate:
		return a, nil
	case kString, kNull:
		return castTo(a, sqlType{k: kDate}), nil
	case kTimestamp:
		return intFn(sqlType{k: kDate}, []enode{a}, func(r int, v []*vec) (int64, bool) {
			return floorDiv(v[0].i[r], usPerDay), true
		}), nil
	}
	return nil, ca.errf(i, "a date argument, found %s", a.typ())
}

// timestamp is argument i as a timestamp (a date at midnight, a string cast).
func (ca *callArgs) timestamp(i int) (enode, error) {
	a := ca.args[i]
	switch a.typ().k {
	case kTimestamp:
		return a, nil
	case kString, kNull, kDate:
		return castTo(a, sqlType{k: kTimestamp}), nil
	}
	return nil, ca.errf(i, "a timestamp argument, found %s", a.typ())
}

func bindDateArith(ca *callArgs) (enode, error) {
	name := ca.c.name
	switch name {
	case "date_from_unix_date":
		n, err := ca.dayCount(0)
		if err != nil {
			return nil, err
		}
		return intFn(sqlType{k: kDate}, []enode{n}, func(r int, v []*vec) (int64, bool) { return v[0].i[r], true }), nil
	case "date_trunc":
		u, err := ca.str(0)
		if err != nil {
			return nil, err
		}
		ts, err := ca.timestamp(1)
		if err != nil {
			return nil, err
		}
		return intFn(sqlType{k: kTimestamp}, []enode{u, ts}, func(r int, v []*vec) (int64, bool) {
			return truncTimestamp(v[1].i[r], string(v[0].str(r)))
		}), nil
	}
	d, err := ca.date(0)
	if err != nil {
		return nil, err
	}
	switch name {
	case "trunc":
		u, err := ca.str(1)
		if err != nil {
			return nil, err
		}
		return intFn(sqlType{k: kDate}, []enode{d, u}, func(r int, v []*vec) (int64, bool) {
			return truncDate(v[0].i[r], string(v[1].str(r)))
		}), nil
	case "datediff":
		s, err := ca.date(1)
		if err != nil {
			return nil, err
		}
		return intFn(sqlType{k: kInt}, []enode{d, s}, func(r int, v []*vec) (int64, bool) {
			return int64(int32(v[0].i[r] - v[1].i[r])), true
		}), nil
	}
	n, err := ca.dayCount(1)
	if err != nil {
		return nil, err
	}
	sub := name == "date_sub"
	return intFn(sqlType{k: kDate}, []enode{d, n}, func(r int, v []*vec) (int64, bool) {
		k := v[1].i[r]
		if sub {
			k = -k
		}
		return int64(int32(v[0].i[r] + k)), true // Spark's dates are ints: the sum wraps
	}), nil
}

// dayCount is argument i as a number of days: Spark takes an int, smallint or tinyint (a
// string is cast), and refuses a bigint.
func (ca *callArgs) dayCount(i int) (enode, error) {
	switch k := ca.args[i].typ().k; k {
	case kInt, kString, kNull:
		return ca.integer(i)
	}
	return nil, ca.errf(i, "an int, smallint or tinyint number of days, found %s", ca.args[i].typ())
}

// bindFromEpoch is timestamp_seconds, timestamp_millis and timestamp_micros. Where Spark
// fails the query on overflow, the engine gives NULL.
func bindFromEpoch(ca *callArgs) (enode, error) {
	name := ca.c.name
	a := ca.args[0]
	k := a.typ().k
	if name == "timestamp_seconds" && (k == kDouble || k == kDecimal) {
		x, err := ca.double(0)
		if k == kDecimal {
			return bindDecimalSeconds(ca)
		}
		if err != nil {
			return nil, err
		}
		return intFn(sqlType{k: kTimestamp}, []enode{x}, func(r int, v []*vec) (int64, bool) {
			f := v[0].f[r]
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return 0, false
			}
			return doubleToLong(f * 1e6), true
		}), nil
	}
	if k != kInt && k != kLong && k != kNull && k != kString {
		return nil, ca.errf(0, "an integral argument, found %s", a.typ())
	}
	x := castTo(a, sqlType{k: kLong})
	mul := map[string]int64{"timestamp_seconds": usPerSec, "timestamp_millis": 1000, "timestamp_micros": 1}[name]
	return intFn(sqlType{k: kTimestamp}, []enode{x}, func(r int, v []*vec) (int64, bool) {
		return mulCheck(v[0].i[r], mul)
	}), nil
}

func bindDecimalSeconds(ca *callArgs) (enode, error) {
	a := ca.args[0]
	s := a.typ().s
	return intFn(sqlType{k: kTimestamp}, []enode{a}, func(r int, v []*vec) (int64, bool) {
		b := v[0].d[r].BigInt()
		b.Mul(b, pow10big(6))
		if s > 0 {
			var rem big.Int
			if b.QuoRem(b, pow10big(s), &rem); rem.Sign() != 0 {
				return 0, false // Spark's longValueExact fails on a fraction of a microsecond
			}
		}
		if !b.IsInt64() {
			return 0, false
		}
		return b.Int64(), true
	}), nil
}
