/* storage_api.c - Storage API handlers: info/ and storage/. */
#include "storage_api.h"

#include <json-c/json.h>
#include <string.h>

#include "config.h"
#include "db_storage.h"
#include "db_user.h"
#include "route.h"
#include "util.h"

/* Send a json-c value as the 200 body, then release it. */
static int send_json(struct response *resp, struct json_object *obj)
{
	size_t len = 0;
	const char *text = json_object_to_json_string_length(
		obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	resp_json(resp, text, len);
	json_object_put(obj);
	return 200;
}

static struct json_object *json_timestamp(int64_t centiseconds)
{
	char text[32];
	format_timestamp(centiseconds, text, sizeof text);
	return json_object_new_double_s((double)centiseconds / 100.0, text);
}

struct collections_ctx {
	struct json_object *obj;
	int64_t newest;
	int64_t rows;
	int kind; /* 0 stamps, 1 counts, 2 kilobytes */
};

static int add_collection(void *ctx, const char *name, size_t len, int64_t value)
{
	struct collections_ctx *c = ctx;
	char key[64];
	if (len >= sizeof key)
		len = sizeof key - 1;
	memcpy(key, name, len);
	key[len] = '\0';
	struct json_object *v;
	if (c->kind == 0) {
		v = json_timestamp(value);
		if (value > c->newest)
			c->newest = value;
	} else if (c->kind == 1) {
		v = json_object_new_int64(value);
	} else {
		v = json_object_new_double((double)value / 1024.0);
	}
	json_object_object_add(c->obj, key, v);
	c->rows++;
	return 0;
}

static int collections_answer(struct request *req, struct response *resp, int kind)
{
	struct collections_ctx c = { json_object_new_object(), 0, 0, kind };
	enum db_status st;
	int64_t now = req->started;

	if (kind == 0)
		st = db_storage_collection_stamps(req->user->id, now, add_collection, &c);
	else if (kind == 1)
		st = db_storage_collection_counts(req->user->id, now, add_collection, &c);
	else
		st = db_storage_collection_bytes(req->user->id, now, add_collection, &c);
	if (st != DB_OK) {
		json_object_put(c.obj);
		return handler_db_failure(req, resp, st);
	}
	if (c.newest > req->timestamp)
		req->timestamp = c.newest;
	if (kind != 2)
		resp_header(resp, "X-Weave-Records", "%lld", (long long)c.rows);
	return send_json(resp, c.obj);
}

/* GET info/collections: 200 {name: last modified}; 503. */
int storage_info_collections(struct request *req, struct response *resp)
{
	return collections_answer(req, resp, 0);
}

/* GET info/collection_counts: 200 {name: records}; 503. */
int storage_info_collection_counts(struct request *req, struct response *resp)
{
	return collections_answer(req, resp, 1);
}

/* GET info/collection_usage: 200 {name: KB}; 503. */
int storage_info_collection_usage(struct request *req, struct response *resp)
{
	return collections_answer(req, resp, 2);
}

/* The user's quota in KB, 0 when none applies. */
static int64_t quota_kb_of(const struct request *req)
{
	return req->user->quota_kb >= 0 ? req->user->quota_kb : req->cfg->quota_kb;
}

/* GET info/quota: 200 [used KB, quota KB or null]; 503. */
int storage_info_quota(struct request *req, struct response *resp)
{
	int64_t bytes = 0;
	enum db_status st = db_storage_total_bytes(req->user->id, req->started, &bytes);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	struct json_object *arr = json_object_new_array();
	json_object_array_add(arr, json_object_new_double((double)bytes / 1024.0));
	int64_t quota = quota_kb_of(req);
	json_object_array_add(arr, quota > 0 ? json_object_new_int64(quota) : NULL);
	return send_json(resp, arr);
}

/* 400 1. */
int storage_illegal_method(struct request *req, struct response *resp)
{
	(void)req;
	resp_error(resp, 400, WEAVE_ERR_ILLEGAL_METHOD);
	return 400;
}

/* 400 11. */
int storage_unsupported_function(struct request *req, struct response *resp)
{
	(void)req;
	resp_error(resp, 400, WEAVE_ERR_UNSUPPORTED_FUNCTION);
	return 400;
}
