/*
 * body.h - request bodies as JSON or as text, whatever their
 * Content-Type (the 1.0 client sends text/plain). A text body that is
 * not valid UTF-8 is taken as Latin-1 (the 1.0 client writes a password
 * as 8-bit bytes); a JSON body must be UTF-8.
 */
#ifndef WEAVE_BODY_H
#define WEAVE_BODY_H

#include <stddef.h>

#include "request.h"
#include "response.h"

struct json_object;

/*
 * Read the request body into req->body (NUL-terminated, req->body_len
 * bytes), at most max_request_bytes. Returns 0, or -1 with the error
 * answered: 400 for a bad Content-Length, 413 17 for a body over the
 * limit (declared or sent).
 */
int body_read(struct request *req, struct response *resp);

/*
 * The whole body as one JSON value (UTF-8, strict JSON, nesting depth
 * 64, only blanks after it). On failure answers 400 6 and returns NULL. The
 * caller releases the value with json_object_put().
 */
struct json_object *body_parse_json(const struct request *req,
				    struct response *resp);

/*
 * The body as UTF-8 text (Latin-1 converted) in a new string; *len gets
 * its length. Never NULL (an empty body gives "").
 */
char *body_text(const struct request *req, size_t *len);

#endif
