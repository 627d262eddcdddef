/* check_suites.h - one Check suite per module under test. */
#ifndef CHECK_SUITES_H
#define CHECK_SUITES_H

#include <check.h>

Suite *util_suite(void);
Suite *config_suite(void);
Suite *request_suite(void);
Suite *auth_suite(void);
Suite *password_suite(void);
Suite *validate_suite(void);
Suite *captcha_suite(void);
Suite *throttle_suite(void);
Suite *reset_code_suite(void);
Suite *output_suite(void);
Suite *wbo_suite(void);
Suite *body_suite(void);
Suite *account_cache_suite(void);
Suite *db_hosts_suite(void);
Suite *mail_suite(void);
Suite *time_arg_suite(void);
Suite *shared_table_suite(void);
Suite *line_reader_suite(void);
Suite *metrics_suite(void);
Suite *upload_order_suite(void);

#endif
