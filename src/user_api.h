/*
 * user_api.h - User API handlers (/user/1/, /user/1.0/ <user>[/...]):
 * registration, node lookup, password change and reset, e-mail change,
 * account deletion. Answers are text/plain without quotes or newline;
 * errors are bare codes as elsewhere (docs/protocol.md, User API).
 *
 * The reset flow it shares with the reset pages is reset_flow.h.
 */
#ifndef WEAVE_USER_API_H
#define WEAVE_USER_API_H

#include <stdbool.h>

#include "buf.h"
#include "request.h"
#include "response.h"

struct json_object;
struct user;

int user_exists(struct request *req, struct response *resp);
int user_create(struct request *req, struct response *resp);
int user_node(struct request *req, struct response *resp);
int user_change_password(struct request *req, struct response *resp);
int user_request_reset(struct request *req, struct response *resp);
int user_clear_reset(struct request *req, struct response *resp);
int user_change_email(struct request *req, struct response *resp);
int user_delete(struct request *req, struct response *resp);
/* 400 1: an action the User API does not have. */
int user_unknown_action(struct request *req, struct response *resp);

/* The configured public_url, or one built from the request (ends in '/'). */
void user_public_url(const struct request *req, struct buf *out);

/* The fields of a registration body (PUT user/<u>); they point into the JSON. */
struct registration {
	const char *email; /* NULL when absent or empty */
	size_t email_len;
	const char *password;
	size_t password_len;
};

/*
 * Read and check the e-mail and password of a registration body for the
 * account path_user (lower-cased, valid). Returns 0, or the Weave error
 * to answer with 400: WEAVE_ERR_NO_EMAIL (invalid address),
 * WEAVE_ERR_EMAIL_MISMATCH (a hashed name the address does not hash
 * to), WEAVE_ERR_MISSING_PASSWORD, WEAVE_ERR_WEAK_PASSWORD.
 */
int user_registration_parse(struct json_object *obj, const char *path_user,
			    struct registration *out);

#endif
