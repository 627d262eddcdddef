/* db_captcha.c - SQL for the captcha_used table (one use per challenge). */
#include "db_captcha.h"

enum captcha_stmt {
	CAPTCHA_PURGE,
	CAPTCHA_INSERT,
	CAPTCHA_STMT__MAX
};

static const char *const captcha_sql[CAPTCHA_STMT__MAX] = {
	/* Bounded so one request never pays for a long backlog. */
	[CAPTCHA_PURGE] = "DELETE FROM captcha_used WHERE expires < ? LIMIT 100",
	[CAPTCHA_INSERT] = "INSERT INTO captcha_used (nonce, expires) VALUES (?, ?)",
};

enum db_status db_captcha_mark_used(const unsigned char *nonce, size_t len,
				    int64_t expires, int64_t now)
{
	if (nonce == NULL || len == 0 || len > 16)
		return DB_ERROR;

	struct db_param purge[] = { DB_INT(now) };
	enum db_status st = db_run(captcha_sql[CAPTCHA_PURGE], purge, 1, NULL,
				   NULL, NULL);
	if (st != DB_OK)
		return st;

	struct db_param insert[] = {
		DB_STR((const char *)nonce, len),
		DB_INT(expires),
	};
	return db_run(captcha_sql[CAPTCHA_INSERT], insert, 2, NULL, NULL, NULL);
}
