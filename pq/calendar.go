package pq

// DaysInMonth is the number of days of month m (1-12) of year y in the proleptic Gregorian
// calendar, which Delta's dates and timestamps use.
func DaysInMonth(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// DaysFromCivil counts days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
// (H. Hinnant's algorithm): the parsers' hot path, cheaper than building a time.Time.
func DaysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
