/* check_mail.c - mail_send: what the sendmail command's end means, and what the log says. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_suites.h"
#include "log.h"
#include "mail.h"

/* Run mail_send with stderr in a file; returns its result, *logged gets the log. */
static int send_logged(const char *command, char *logged, size_t cap)
{
	char path[] = "/tmp/check_mail.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	int rc = mail_send(command, "weave@example.org", "alice@example.org", "subject", "body\n");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	ssize_t n = pread(fd, logged, cap - 1, 0);
	logged[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	return rc;
}

START_TEST(accepted_message)
{
	char logged[2048];
	ck_assert_int_eq(send_logged("cat >/dev/null", logged, sizeof logged), 0);
	ck_assert_str_eq(logged, "");
}
END_TEST

START_TEST(missing_command_says_not_found)
{
	char logged[2048];
	ck_assert_int_eq(send_logged("/nonexistent/sendmail -t -i", logged, sizeof logged), -1);
	ck_assert_ptr_nonnull(strstr(logged, "was not found (exit 127)"));
	ck_assert_ptr_null(strstr(logged, "32512")); /* no raw wait status */
}
END_TEST

START_TEST(failing_command_says_its_exit_status)
{
	char logged[2048];
	ck_assert_int_eq(send_logged("cat >/dev/null; exit 75", logged, sizeof logged), -1);
	ck_assert_ptr_nonnull(strstr(logged, "failed with exit status 75"));
}
END_TEST

START_TEST(multi_line_header_refused)
{
	char logged[2048];
	ck_assert_int_eq(mail_send("cat >/dev/null", "a@b.c", "x@y.z\nBcc: z@z.z", "s", "b"), -1);
	(void)logged;
}
END_TEST

Suite *mail_suite(void)
{
	Suite *s = suite_create("mail");
	TCase *tc = tcase_create("send");
	log_set_level(LOG_LEVEL_ERROR);
	tcase_add_test(tc, accepted_message);
	tcase_add_test(tc, missing_command_says_not_found);
	tcase_add_test(tc, failing_command_says_its_exit_status);
	tcase_add_test(tc, multi_line_header_refused);
	suite_add_tcase(s, tc);
	return s;
}
