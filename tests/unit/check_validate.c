/* check_validate.c - unit tests for src/validate.c. */
#include "check_suites.h"

Suite *validate_suite(void)
{
	Suite *s = suite_create("validate");
	return s;
}
