/* check_util.c - unit tests for src/util.c. */
#include "check_suites.h"

Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	return s;
}
