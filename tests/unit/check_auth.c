/* check_auth.c - unit tests for src/auth.c. */
#include "check_suites.h"

Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	return s;
}
