/* check_main.c - runs every unit suite; Check prints the summary line. */
#include <stdlib.h>

#include "check_suites.h"
#include "log.h"

int main(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	SRunner *sr = srunner_create(util_suite());
	srunner_add_suite(sr, config_suite());
	srunner_add_suite(sr, request_suite());
	srunner_add_suite(sr, auth_suite());
	srunner_add_suite(sr, password_suite());
	srunner_add_suite(sr, validate_suite());
	srunner_add_suite(sr, captcha_suite());
	srunner_add_suite(sr, throttle_suite());
	srunner_add_suite(sr, reset_code_suite());
	srunner_add_suite(sr, output_suite());
	srunner_add_suite(sr, wbo_suite());
	srunner_add_suite(sr, body_suite());
	srunner_add_suite(sr, account_cache_suite());
	srunner_add_suite(sr, db_hosts_suite());
	srunner_add_suite(sr, mail_suite());
	srunner_add_suite(sr, time_arg_suite());
	srunner_add_suite(sr, shared_table_suite());
	srunner_add_suite(sr, line_reader_suite());
	srunner_add_suite(sr, metrics_suite());
	srunner_add_suite(sr, upload_order_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
