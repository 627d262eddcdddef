/* check_line_reader.c - tools/line_reader.c: lines with a hard cap on their length. */
#include <check.h>
#include <string.h>

#include "../../tools/line_reader.h"
#include "check_suites.h"

/* A source that hands out `data` at most `step` bytes a call. */
struct mem {
	const char *data;
	size_t len, pos, step, calls;
	int fail_at; /* fail on this call (1-based), 0: never */
};

static ssize_t mem_read(void *src, char *out, size_t cap)
{
	struct mem *m = src;
	m->calls++;
	if (m->fail_at > 0 && m->calls == (size_t)m->fail_at)
		return -1;
	size_t n = m->len - m->pos;
	n = n < cap ? n : cap;
	n = n < m->step ? n : m->step;
	memcpy(out, m->data + m->pos, n);
	m->pos += n;
	return (ssize_t)n;
}

static struct line_reader lr;

START_TEST(test_lines_with_nul_and_no_final_newline)
{
	static const char data[] = "one\n\ntw\0o\nlast";
	struct mem m = { data, sizeof data - 1, 0, 3, 0, 0 };
	struct buf line;
	buf_init(&line, 100);
	line_reader_init(&lr, mem_read, &m);
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_OK);
	ck_assert_uint_eq(line.len, 3);
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_OK);
	ck_assert_uint_eq(line.len, 0);
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_OK);
	ck_assert_uint_eq(line.len, 4);
	ck_assert(memcmp(line.data, "tw\0o", 4) == 0);
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_OK);
	ck_assert_str_eq(line.data, "last");
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_EOF);
	ck_assert_int_eq(lr.consumed, (int64_t)(sizeof data - 1));
	buf_free(&line);
}
END_TEST

START_TEST(test_a_line_over_the_cap_stops_reading)
{
	static char data[1 << 20];
	memset(data, 'x', sizeof data);
	struct mem m = { data, sizeof data, 0, 4096, 0, 0 };
	struct buf line;
	buf_init(&line, 10000);
	line_reader_init(&lr, mem_read, &m);
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_TOO_LONG);
	/* One block past the cap at most, not the whole megabyte. */
	ck_assert_uint_le(m.pos, 10000 + LINE_READER_BLOCK);
	ck_assert_uint_le(line.len, 10000);
	buf_free(&line);
}
END_TEST

START_TEST(test_a_line_at_the_cap_is_whole)
{
	static char data[101];
	memset(data, 'y', 100);
	data[100] = '\n';
	struct mem m = { data, sizeof data, 0, 7, 0, 0 };
	struct buf line;
	buf_init(&line, 100);
	line_reader_init(&lr, mem_read, &m);
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_OK);
	ck_assert_uint_eq(line.len, 100);
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_EOF);
	buf_free(&line);
}
END_TEST

START_TEST(test_a_read_error_is_reported)
{
	static const char data[] = "a\nbbbbbbbb";
	struct mem m = { data, sizeof data - 1, 0, 4, 0, 2 };
	struct buf line;
	buf_init(&line, 100);
	line_reader_init(&lr, mem_read, &m);
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_OK);
	ck_assert_int_eq(line_reader_next(&lr, &line), LINE_ERROR);
	buf_free(&line);
}
END_TEST

Suite *line_reader_suite(void)
{
	Suite *s = suite_create("line_reader");
	TCase *tc = tcase_create("lines");
	tcase_add_test(tc, test_lines_with_nul_and_no_final_newline);
	tcase_add_test(tc, test_a_line_over_the_cap_stops_reading);
	tcase_add_test(tc, test_a_line_at_the_cap_is_whole);
	tcase_add_test(tc, test_a_read_error_is_reported);
	suite_add_tcase(s, tc);
	return s;
}
