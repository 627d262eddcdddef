/* health.c - the health URL (is the database there?) and the metrics URL, for monitoring. */
#include "health.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/crypto.h>

#include "client_address.h"
#include "config.h"
#include "db.h"
#include "db_schema.h"
#include "log.h"
#include "metrics.h"

#define HEALTH_RETRY_AFTER 30

/* 200 when the database answers with the schema this build needs. */
static void serve_health(struct response *resp)
{
	int64_t version = 0;
	enum db_status st = db_schema_version(&version);
	bool db_ok = st == DB_OK;
	bool schema_ok = db_ok && version >= DB_SCHEMA_VERSION;
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "status", json_object_new_string(
		schema_ok ? "ok" : db_ok ? "upgrade" : "error"));
	json_object_object_add(o, "version", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(o, "database", json_object_new_string(
		db_ok ? "ok" : "unreachable"));
	if (db_ok)
		json_object_object_add(o, "schema_version", json_object_new_int64(version));
	json_object_object_add(o, "schema_needed", json_object_new_int(DB_SCHEMA_VERSION));
	size_t len;
	const char *text = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	resp_json(resp, text, len);
	json_object_put(o);
	resp_header(resp, "Cache-Control", "no-store");
	if (!schema_ok) {
		log_warn("health: %s", db_ok ? "schema older than this build (weave-admin db "
				       "upgrade)" : "database unreachable");
		resp->status = 503;
		resp_header(resp, "Retry-After", "%d", HEALTH_RETRY_AFTER);
	}
}

/* "Bearer <metrics_token>" in the Authorization header, compared in constant time. */
static bool token_matches(const struct request *req, const char *token)
{
	const char *h = request_env(req, "HTTP_AUTHORIZATION");
	if (h == NULL)
		h = request_env(req, "Authorization");
	if (token == NULL || h == NULL || strncmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	size_t len = strlen(token);
	return strlen(h) == len && CRYPTO_memcmp(h, token, len) == 0;
}

static void serve_metrics(struct request *req, struct response *resp)
{
	const struct config *cfg = req->cfg;
	if (!cfg->metrics) {
		resp_error(resp, 404, WEAVE_ERR_NONE);
		return;
	}
	request_find_client(req);
	const char *addr = request_client_address(req);
	if (!token_matches(req, cfg->metrics_token) &&
	    !(addr != NULL && client_address_in_list(cfg->metrics_allow, addr))) {
		log_info("metrics refused to %s: not in metrics_allow, no metrics_token",
			 addr ? addr : "(no address)");
		resp_error(resp, 403, WEAVE_ERR_NONE);
		return;
	}
	struct buf text;
	buf_init(&text, 1024 * 1024);
	metrics_render(&text);
	resp_text(resp, text.data ? text.data : "");
	buf_free(&text);
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	resp_header(resp, "Cache-Control", "no-store");
}

bool health_serve(struct request *req, struct response *resp)
{
	const char *info = request_env(req, "PATH_INFO");
	bool health = info != NULL && (strcmp(info, "/health") == 0 ||
				       strcmp(info, "/__heartbeat__") == 0);
	bool metrics = info != NULL && strcmp(info, "/metrics") == 0;
	if (!health && !metrics)
		return false;
	const char *method = request_env(req, "REQUEST_METHOD");
	if (method == NULL || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)) {
		resp_header(resp, "Allow", "GET, HEAD");
		resp_error(resp, 405, WEAVE_ERR_NONE);
		return true;
	}
	if (health)
		serve_health(resp);
	else
		serve_metrics(req, resp);
	return true;
}
