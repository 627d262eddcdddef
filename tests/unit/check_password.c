/* check_password.c - unit tests for src/password.c. */
#include "check_suites.h"

Suite *password_suite(void)
{
	Suite *s = suite_create("password");
	return s;
}
