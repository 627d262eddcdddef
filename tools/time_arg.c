/* time_arg.c - Weave timestamps and ISO 8601 date-times typed by an administrator. */
#include "time_arg.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Read exactly n digits at *p into *v, moving *p past them. */
static bool digits(const char **p, int n, int *v)
{
	int value = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return false;
		value = value * 10 + (c - '0');
	}
	*p += n;
	*v = value;
	return true;
}

static bool leap_year(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	return m == 2 && leap_year(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; y >= 1970). */
static int64_t days_since_epoch(int y, int m, int d)
{
	int64_t days = 0;
	for (int year = 1970; year < y; year++)
		days += leap_year(year) ? 366 : 365;
	for (int month = 1; month < m; month++)
		days += days_in_month(y, month);
	return days + d - 1;
}

/* "Z", "+HH:MM", "-HH:MM", "+HHMM", "+HH" or nothing: seconds east of UTC. */
static bool parse_offset(const char *p, int64_t *seconds)
{
	int hours = 0, minutes = 0;
	*seconds = 0;
	if (*p == '\0' || ((p[0] == 'Z' || p[0] == 'z') && p[1] == '\0'))
		return true;
	if (*p != '+' && *p != '-')
		return false;
	int sign = *p == '-' ? -1 : 1;
	p++;
	if (!digits(&p, 2, &hours) || hours > 23)
		return false;
	if (*p == ':')
		p++;
	if (*p != '\0' && (!digits(&p, 2, &minutes) || minutes > 59))
		return false;
	if (*p != '\0')
		return false;
	*seconds = sign * (hours * 3600 + minutes * 60);
	return true;
}

static int parse_iso(const char *p, int64_t *out)
{
	int y, mo, d, h = 0, mi = 0, s = 0, cs = 0;
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) ||
	    *p++ != '-' || !digits(&p, 2, &d))
		return -1;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return -1;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
			return -1;
		if (*p == ':') {
			p++;
			if (!digits(&p, 2, &s))
				return -1;
			if (*p == '.' || *p == ',') {
				p++;
				int tenths, hundredths = 0;
				if (!digits(&p, 1, &tenths))
					return -1;
				if (*p >= '0' && *p <= '9')
					digits(&p, 1, &hundredths);
				cs = tenths * 10 + hundredths;
				/* Finer digits (Python's isoformat() writes
				 * microseconds) are cut, not rounded: "as of"
				 * a time must not take in a write after it. */
				while (*p >= '0' && *p <= '9')
					p++;
			}
		}
		if (h > 23 || mi > 59 || s > 59)
			return -1;
	}
	int64_t offset;
	if (!parse_offset(p, &offset))
		return -1;
	int64_t seconds = days_since_epoch(y, mo, d) * 86400 + h * 3600 + mi * 60 + s -
			  offset;
	if (seconds < 0)
		return -1;
	*out = seconds * 100 + cs;
	return 0;
}

int time_arg_parse(const char *s, int64_t *out)
{
	/* A date starts with four digits and '-'; a timestamp has no '-'. */
	if (strlen(s) >= 5 && s[4] == '-')
		return parse_iso(s, out);
	return parse_timestamp(s, out);
}

void time_arg_format(int64_t centiseconds, char *out, size_t cap)
{
	int64_t seconds = centiseconds / 100, cs = centiseconds % 100;
	int64_t days = seconds / 86400, rest = seconds % 86400;
	int y = 1970, m = 1;
	while (days >= (leap_year(y) ? 366 : 365)) {
		days -= leap_year(y) ? 366 : 365;
		y++;
	}
	while (days >= days_in_month(y, m)) {
		days -= days_in_month(y, m);
		m++;
	}
	char fraction[8] = "";
	if (cs != 0)
		snprintf(fraction, sizeof fraction, ".%02d", (int)cs);
	snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", y, m, (int)days + 1,
		 (int)(rest / 3600), (int)(rest / 60 % 60), (int)(rest % 60), fraction);
}
