/*
 * account_name.h - the one rule from a name as given (URL path, reset
 * page, weave-admin) to the name its account is stored under.
 *
 * A name with '@' is an e-mail login: it is stored under
 * lower(base32(sha1(lower(e-mail)))), 32 characters, which is what Sync
 * 1.1 clients send by themselves. Such a name is not required to be a
 * valid address: the Basic parser (auth.c) maps every login name with
 * '@' this way, and an account made under such a name must stay
 * reachable everywhere. Any other name must pass validate_username()
 * and is stored in lower case. docs/HACKING.md, "Where each concern
 * lives", lists the callers.
 */
#ifndef WEAVE_ACCOUNT_NAME_H
#define WEAVE_ACCOUNT_NAME_H

#include <stdbool.h>
#include <stddef.h>

#include "validate.h"

/*
 * The stored name for given (len bytes, need not be NUL-terminated) in
 * out. false, out empty, when given is not a name: empty, an e-mail
 * login longer than AUTH_USER_MAX, or an invalid plain name.
 */
bool account_name_normalise(const char *given, size_t len,
			    char out[USERNAME_MAX + 1]);

/* Is given an e-mail login (does it hold '@')? */
bool account_name_is_email(const char *given, size_t len);

/* Could the stored name be an e-mail login's (32 base32 characters)? */
bool account_name_is_hashed(const char *name);

#endif
