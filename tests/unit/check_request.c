/* check_request.c - unit tests for src/request.c. */
#include "check_suites.h"

Suite *request_suite(void)
{
	Suite *s = suite_create("request");
	return s;
}
