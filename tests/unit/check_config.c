/* check_config.c - unit tests for src/config.c. */
#include "check_suites.h"

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	return s;
}
