/* storage_api.c - Storage API handlers: info/ and storage/. */
#include "storage_api.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "body.h"
#include "config.h"
#include "db_storage.h"
#include "db_user.h"
#include "handler.h"
#include "log.h"
#include "output.h"
#include "query.h"
#include "account_cache.h"
#include "util.h"
#include "write_lock.h"
#include "validate.h"
#include "wbo.h"

/* obj as compact JSON text, owned by obj. */
static const char *json_text(struct json_object *obj, size_t *len)
{
	return json_object_to_json_string_length(
		obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, len);
}

/* Send a json-c value as the 200 body, then release it. */
static int send_json(struct response *resp, struct json_object *obj)
{
	size_t len = 0;
	const char *text = json_text(obj, &len);
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

/* Send an info answer: its body, X-Weave-Records, the timestamp. */
static int send_collections(struct request *req, struct response *resp,
			    const struct account_answer *a, bool with_records)
{
	if (a->newest > req->timestamp)
		req->timestamp = a->newest;
	if (with_records)
		resp_header_int(resp, "X-Weave-Records", a->rows);
	resp_json(resp, a->body, a->len);
	return 200;
}

static int collections_answer(struct request *req, struct response *resp, int kind)
{
	const struct user *u = req->user;
	int64_t now = req->started;
	struct account_answer a;

	if (kind == 0 && account_cache_answer_get(u, now, &a))
		return send_collections(req, resp, &a, true);

	struct collections_ctx c = { json_object_new_object(), 0, 0, kind };
	int64_t valid_until = 0;
	enum db_status st;
	if (kind == 0)
		st = db_storage_collection_stamps(u->id, now, add_collection, &c,
						  &valid_until);
	else if (kind == 1)
		st = db_storage_collection_counts(u->id, now, add_collection, &c);
	else
		st = db_storage_collection_bytes(u->id, now, add_collection, &c);
	if (st != DB_OK) {
		json_object_put(c.obj);
		return handler_db_failure(req, resp, st);
	}
	a.body = json_text(c.obj, &a.len);
	a.newest = c.newest;
	a.rows = c.rows;
	if (kind == 0)
		account_cache_answer_put(u, valid_until, &a);
	int status = send_collections(req, resp, &a, kind != 2);
	json_object_put(c.obj);
	return status;
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
	return resp_error(resp, 400, WEAVE_ERR_ILLEGAL_METHOD);
}

/* 400 11. */
int storage_unsupported_function(struct request *req, struct response *resp)
{
	(void)req;
	return resp_error(resp, 400, WEAVE_ERR_UNSUPPORTED_FUNCTION);
}

/* ---- storage/ -------------------------------------------------------- */

/* The body of PUT and DELETE answers: the request's timestamp. */
static int answer_timestamp(struct request *req, struct response *resp)
{
	char stamp[32];
	format_timestamp(req->timestamp, stamp, sizeof stamp);
	resp_json(resp, stamp, strlen(stamp));
	return 200;
}

/*
 * X-If-Unmodified-Since: 412 4 when the collection (or all storage) was
 * modified after the given time. Checked inside the write's transaction
 * with the user row locked, so two racing writers cannot both pass.
 * Returns 0 to go on, else the handler's status.
 */
static int check_unmodified(struct request *req, struct response *resp,
			    const char *collection)
{
	const char *value = request_header(req, "X-If-Unmodified-Since");
	int64_t since, newest;
	if (value == NULL)
		return 0;
	if (parse_timestamp(value, &since) < 0)
		return resp_error(resp, 400, WEAVE_ERR_ILLEGAL_METHOD);
	enum db_status st = db_storage_last_modified(req->user->id, collection,
						     req->started, &newest);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	if (newest > since)
		return resp_error(resp, 412, WEAVE_ERR_OVERWRITE);
	return 0;
}

/*
 * An upload whose login took no lock (write_lock.h) locks before writing
 * when X-If-Unmodified-Since must be checked under the lock, or when a
 * record keeps its stored modified (no payload nor parentid): a restamp
 * could not tell such a row from one this write stamped. 0 or a status.
 */
static int lock_before_writing(struct request *req, struct response *resp,
			       const struct wbo *items, size_t n)
{
	bool early = request_header(req, "X-If-Unmodified-Since") != NULL;
	for (size_t i = 0; i < n && !early; i++)
		early = (items[i].fields & (WBO_FIELD_PAYLOAD | WBO_FIELD_PARENTID)) == 0;
	return early ? write_lock_take(req, resp, req->collection, NULL, 0) : 0;
}

/*
 * After a write, inside its transaction: 400 14 when the user is now
 * over quota (the write is rolled back), and X-Weave-Quota-Remaining
 * when 1024 KB or less are left. Returns 0 to go on, else a status.
 */
static int check_quota(struct request *req, struct response *resp)
{
	int64_t quota = quota_kb_of(req), bytes;
	if (quota <= 0)
		return 0;
	enum db_status st = db_storage_total_bytes(req->user->id, req->started, &bytes);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	int64_t left = quota * 1024 - bytes;
	if (left < 0)
		return resp_error(resp, 400, WEAVE_ERR_OVER_QUOTA);
	if (left <= 1024 * 1024)
		resp_header(resp, "X-Weave-Quota-Remaining", "%.10g",
			    (double)left / 1024.0);
	return 0;
}

struct list_ctx {
	struct output_list out;
	bool full;
	int64_t newest;
	int failed;
};

static int add_record(void *ctx, const struct wbo_row *row)
{
	struct list_ctx *l = ctx;
	int rc = output_item_begin(&l->out);
	if (rc == 0)
		rc = l->full ? wbo_row_to_json(l->out.body, row)
			     : wbo_json_escape(l->out.body, row->id, row->id_len);
	if (rc == 0)
		rc = output_item_end(&l->out);
	if (row->modified > l->newest)
		l->newest = row->modified;
	if (rc != 0) {
		l->failed = 1;
		return 1;
	}
	return 0;
}

/* Map a query_parse() failure to its answer. */
static int query_failure(struct response *resp, enum query_error e, const char *bad)
{
	log_info("bad query parameter '%s'", bad ? bad : "?");
	if (e == QUERY_BAD_ID)
		return resp_error(resp, 400, WEAVE_ERR_INVALID_WBO);
	if (e == QUERY_TOO_MANY_IDS)
		return resp_error(resp, 400, WEAVE_ERR_SIZE_LIMIT);
	return resp_error(resp, 400, WEAVE_ERR_ILLEGAL_METHOD);
}

/*
 * GET storage/<coll>: 200 with ids or (full) records as a JSON array,
 * newlines or whoisi, X-Weave-Records; 400 8 bad parentid or
 * predecessorid, 400 17 too many ids, 400 1 bad number or sort; 503.
 */
int storage_get_collection(struct request *req, struct response *resp)
{
	struct wbo_query q;
	const char *bad;
	enum query_error e = query_parse(req, (size_t)req->cfg->max_ids, &q, &bad);
	if (e != QUERY_OK) {
		query_free(&q);
		return query_failure(resp, e, bad);
	}
	struct list_ctx l;
	memset(&l, 0, sizeof l);
	l.full = q.full;
	enum output_format fmt = output_choose(request_header(req, "Accept"));
	buf_reset(&resp->body);
	output_begin(&l.out, fmt, &resp->body);
	enum db_status st = db_storage_select(req->user->id, req->collection, &q,
					      req->started, add_record, &l);
	query_free(&q);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	if (l.failed || output_end(&l.out) != 0) {
		log_error("response larger than %u bytes; ask with a smaller limit",
			  RESPONSE_MAX_BODY);
		return resp_error(resp, 503, WEAVE_ERR_NONE);
	}
	resp->status = 200;
	resp->content_type = output_content_type(fmt);
	resp_header_int(resp, "X-Weave-Records", (int64_t)l.out.count);
	if (l.newest > req->timestamp)
		req->timestamp = l.newest;
	return 200;
}

struct one_ctx {
	struct response *resp;
	int64_t modified;
};

static int put_one(void *ctx, const struct wbo_row *row)
{
	struct one_ctx *o = ctx;
	buf_reset(&o->resp->body);
	wbo_row_to_json(&o->resp->body, row);
	o->modified = row->modified;
	return 0;
}

/* GET storage/<coll>/<id>: 200 with the record; 404; 503. */
int storage_get_record(struct request *req, struct response *resp)
{
	struct one_ctx o = { resp, 0 };
	enum db_status st = db_storage_get(req->user->id, req->collection,
					   req->record_id, req->started, put_one, &o);
	if (st == DB_NOT_FOUND)
		return resp_error(resp, 404, WEAVE_ERR_NONE);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	resp->status = 200;
	resp->content_type = "application/json";
	if (o.modified > req->timestamp)
		req->timestamp = o.modified;
	return 200;
}

/*
 * Write one record parsed from obj (its id is url_id, or the body's when
 * url_id is NULL), then answer with the timestamp. Releases obj.
 */
static int put_one_record(struct request *req, struct response *resp,
			  struct json_object *obj, const char *url_id)
{
	struct wbo w;
	enum wbo_error e = wbo_parse(obj, url_id,
				     (size_t)req->cfg->max_payload_bytes, &w);
	if (e != WBO_OK) {
		log_info("PUT rejected: %s", wbo_error_text(e));
		json_object_put(obj);
		return resp_error(resp, 400, WEAVE_ERR_INVALID_WBO);
	}
	int status = lock_before_writing(req, resp, &w, 1);
	if (status == 0)
		status = check_unmodified(req, resp, req->collection);
	if (status == 0) {
		enum db_status st = db_storage_put(req->write, req->user->id,
						   req->collection, &w, 1,
						   req->timestamp, !req->lock_pending);
		status = st == DB_OK ? 0 : handler_db_failure(req, resp, st);
	}
	if (status == 0)
		status = write_lock_take(req, resp, req->collection, &w, 1);
	json_object_put(obj);
	if (status == 0)
		status = check_quota(req, resp);
	return status != 0 ? status : answer_timestamp(req, resp);
}

/*
 * PUT storage/<coll>/<id>: 200 with the timestamp; 400 6 not JSON;
 * 400 8 invalid record or body id differs from the URL id; 400 14 over
 * quota; 412 4 modified since X-If-Unmodified-Since; 503.
 */
int storage_put_record(struct request *req, struct response *resp)
{
	struct json_object *obj = body_parse_json(req, resp);
	if (obj == NULL)
		return 400;
	return put_one_record(req, resp, obj, req->record_id);
}

/*
 * POST storage/<coll> (and PUT storage/<coll>). A JSON object is one
 * record, its id taken from the body, written and answered exactly as a
 * PUT of storage/<coll>/<id> (both Mozilla servers did so). A JSON array
 * is a batch: each record is validated on its own, and the valid ones
 * up to max_post_records and max_post_bytes are written in this
 * request's transaction with one timestamp; the others are listed in
 * "failed" with their reason ("retry wbo" / "retry bytes" past a
 * limit). 200 {"modified","success","failed"}; 400 6 not JSON; 400 8
 * neither array nor object; 400 14 over quota; 412 4; 503 (nothing
 * written).
 */
int storage_post_collection(struct request *req, struct response *resp)
{
	struct wbo_batch batch;
	struct json_object *body = body_parse_json(req, resp);
	if (body == NULL)
		return 400;
	if (json_object_is_type(body, json_type_object))
		return put_one_record(req, resp, body, NULL);
	enum wbo_batch_status bs =
		wbo_batch_parse(body, (size_t)req->cfg->max_post_records,
				(size_t)req->cfg->max_post_bytes,
				(size_t)req->cfg->max_payload_bytes, &batch);
	if (bs != WBO_BATCH_OK) {
		wbo_batch_free(&batch);
		json_object_put(body);
		return resp_error(resp, 400, WEAVE_ERR_INVALID_WBO);
	}
	if (batch.nvalid < batch.count)
		log_info("POST of %zu records: %zu to store, see its failed list",
			 batch.count, batch.nvalid);

	int status = lock_before_writing(req, resp, batch.items, batch.nvalid);
	if (status == 0)
		status = check_unmodified(req, resp, req->collection);
	if (status == 0 && batch.nvalid > 0) {
		enum db_status st = db_storage_put(req->write, req->user->id, req->collection,
						   batch.items, batch.nvalid,
						   req->timestamp, !req->lock_pending);
		status = st == DB_OK ? 0 : handler_db_failure(req, resp, st);
	}
	if (status == 0)
		status = write_lock_take(req, resp, req->collection, batch.items,
					 batch.nvalid);
	if (status == 0 && batch.nvalid > 0)
		status = check_quota(req, resp);
	if (status == 0) {
		struct json_object *success = json_object_new_array();
		for (size_t k = 0; k < batch.nvalid; k++)
			json_object_array_add(success,
					      json_object_new_string_len(batch.items[k].id,
									 (int)batch.items[k].id_len));
		struct json_object *answer = json_object_new_object();
		json_object_object_add(answer, "modified", json_timestamp(req->timestamp));
		json_object_object_add(answer, "success", success);
		json_object_object_add(answer, "failed", batch.failed);
		batch.failed = NULL; /* the answer owns it now */
		status = send_json(resp, answer);
	}
	wbo_batch_free(&batch);
	json_object_put(body);
	return status;
}

/*
 * DELETE storage/<coll>: deletes the records matching the query (all of
 * the collection without one). 200 with the timestamp; 400 8/17/1 as
 * for GET; 412 4; 503.
 */
int storage_delete_collection(struct request *req, struct response *resp)
{
	struct wbo_query q;
	const char *bad;
	uint64_t deleted = 0;
	enum query_error e = query_parse(req, (size_t)req->cfg->max_ids, &q, &bad);
	if (e != QUERY_OK) {
		query_free(&q);
		return query_failure(resp, e, bad);
	}
	int status = check_unmodified(req, resp, req->collection);
	if (status == 0) {
		enum db_status st = db_storage_delete(req->write, req->user->id,
						      req->collection, &q, req->started,
						      &deleted);
		status = st == DB_OK ? 0 : handler_db_failure(req, resp, st);
	}
	query_free(&q);
	if (status != 0)
		return status;
	log_debug("deleted %llu records from %s", (unsigned long long)deleted,
		  req->collection);
	return answer_timestamp(req, resp);
}

/* DELETE storage/<coll>/<id>: 200 with the timestamp (also when absent); 412 4; 503. */
int storage_delete_record(struct request *req, struct response *resp)
{
	int status = check_unmodified(req, resp, req->collection);
	if (status != 0)
		return status;
	enum db_status st = db_storage_delete_one(req->write, req->user->id,
						  req->collection, req->record_id);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	return answer_timestamp(req, resp);
}

/*
 * DELETE storage: every record of the user. Needs X-Confirm-Delete
 * (any value), else 400 4 as server-storage answered (the PHP server
 * said 412 4; clients always send the header). 200 with the timestamp;
 * 400 4; 412 4 X-If-Unmodified-Since; 503.
 */
int storage_delete_all(struct request *req, struct response *resp)
{
	if (request_header(req, "X-Confirm-Delete") == NULL)
		return resp_error(resp, 400, WEAVE_ERR_OVERWRITE);
	int status = check_unmodified(req, resp, NULL);
	if (status != 0)
		return status;
	enum db_status st = db_storage_delete_all(req->write, req->user->id);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	return answer_timestamp(req, resp);
}
