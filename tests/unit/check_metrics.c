/* check_metrics.c - unit tests for src/metrics.c: route labels, counting, the text format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_suites.h"
#include "metrics.h"
#include "request.h"

/* The route label of method + uri below the mount point /weave. */
static const char *route_of(const char *method, const char *uri, struct request *req)
{
	request_init(req, 1, NULL);
	req->method = request_method_parse(method);
	ck_assert_int_eq(request_parse_uri(req, "/weave", uri, NULL, NULL), REQUEST_OK);
	return metrics_route_name(req);
}

START_TEST(test_route_names)
{
	static const struct {
		const char *uri, *route;
	} cases[] = {
		{ "/weave/1.0/alice/info/collections", "info_collections" },
		{ "/weave/1.1/alice/info/collection_counts", "info_collection_counts" },
		{ "/weave/1.1/alice/info/quota", "info_quota" },
		{ "/weave/1/alice/info/collection_usage", "info_collection_usage" },
		{ "/weave/1.1/alice/info/other", "other" },
		{ "/weave/1.1/alice/storage", "storage" },
		{ "/weave/1.1/alice/storage/tabs", "collection" },
		{ "/weave/1.1/alice/storage/tabs/abc", "record" },
		{ "/weave/user/1.0/alice", "user" },
		{ "/weave/user/1.0/alice/node/weave", "node" },
		{ "/weave/user/1.0/alice/password", "password" },
		{ "/weave/user/1.0/alice/password_reset", "password_reset" },
		{ "/weave/user/1.0/alice/email", "email" },
		{ "/weave/misc/1.0/captcha_html", "captcha" },
		{ "/weave/weave-password-reset", "reset_page" },
		{ "/weave/", "root" },
		{ "/weave/anything-a-client-sends", "other" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct request req;
		ck_assert_str_eq(route_of("GET", cases[i].uri, &req), cases[i].route);
		request_free(&req);
	}
}
END_TEST

/* Labels never carry client bytes: a hostile name still counts as "other". */
START_TEST(test_route_names_are_fixed)
{
	struct request req;
	ck_assert_str_eq(route_of("GET", "/weave/%22%7D%20evil", &req), "other");
	request_free(&req);
}
END_TEST

START_TEST(test_counts_and_renders)
{
	char path[] = "/tmp/check-metrics-XXXXXX", err[256];
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd); /* empty: metrics_open gives it the layout */
	ck_assert_msg(metrics_open(path, err, sizeof err) == 0, "%s", err);
	struct request req;
	route_of("PUT", "/weave/1.1/alice/storage/tabs/abc", &req);
	metrics_request(&req, 200, 1500);   /* 1.5 ms: above the 1 ms bucket */
	metrics_request(&req, 200, 30000);  /* 30 ms */
	metrics_request(&req, 599, 20000000); /* an odd status, 20 s: +Inf only */
	request_free(&req);
	metrics_db_error();
	struct buf out;
	buf_init(&out, 1024 * 1024);
	metrics_render(&out);
	const char *t = out.data;
	ck_assert_ptr_nonnull(strstr(t, "weave_requests_total{route=\"record\",method=\"PUT\","
					"status=\"200\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(t, "weave_requests_total{route=\"record\",method=\"PUT\","
					"status=\"other\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "route=\"record\",le=\"0.001\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(t, "route=\"record\",le=\"0.0025\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "route=\"record\",le=\"0.05\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(t, "route=\"record\",le=\"10\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(t, "route=\"record\",le=\"+Inf\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(t, "weave_request_duration_seconds_count{route=\"record\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(t, "weave_request_duration_seconds_sum{route=\"record\"} "
					"20.031500\n"));
	ck_assert_ptr_nonnull(strstr(t, "weave_db_errors_total 1\n"));
	ck_assert_ptr_null(strstr(t, "route=\"collection\"")); /* nothing counted there */
	buf_free(&out);
	/* A second open (another process) sees the same counts. */
	ck_assert_int_eq(metrics_open(path, err, sizeof err), 0);
	buf_init(&out, 1024 * 1024);
	metrics_render(&out);
	ck_assert_ptr_nonnull(strstr(out.data, "weave_db_errors_total 1\n"));
	buf_free(&out);
	unlink(path);
}
END_TEST

Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("metrics");
	tcase_add_test(tc, test_route_names);
	tcase_add_test(tc, test_route_names_are_fixed);
	tcase_add_test(tc, test_counts_and_renders);
	suite_add_tcase(s, tc);
	return s;
}
