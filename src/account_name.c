/* account_name.c - from a name as given to the name its account is stored under. */
#include "account_name.h"

#include <string.h>

#include "auth.h"
#include "util.h"

bool account_name_is_email(const char *given, size_t len)
{
	return memchr(given, '@', len) != NULL;
}

bool account_name_normalise(const char *given, size_t len,
			    char out[USERNAME_MAX + 1])
{
	out[0] = '\0';
	if (account_name_is_email(given, len)) {
		/* Longer than the Basic parser takes: no login could reach it. */
		if (len > AUTH_USER_MAX)
			return false;
		auth_email_to_username(given, len, out);
		return true;
	}
	if (!validate_username(given, len))
		return false;
	memcpy(out, given, len);
	out[len] = '\0';
	ascii_lower(out);
	return true;
}

bool account_name_is_hashed(const char *name)
{
	if (strlen(name) != 32)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '2' && *p <= '7')))
			return false;
	return true;
}
