/* fuzz_config.c - the weave.conf parser (src/config.c). */
#include "fuzz.h"

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg;
	char err[512];

	err[0] = '\0';
	config_defaults(&cfg);
	int rc = config_parse(&cfg, "fuzz.conf", (const char *)data, size, err,
			      sizeof err);
	FUZZ_ASSERT(rc == 0 || rc == -1);
	if (rc < 0) {
		/* Every refusal says where and why. */
		FUZZ_ASSERT(strncmp(err, "fuzz.conf:", 10) == 0);
		FUZZ_ASSERT(memchr(err, '\0', sizeof err) != NULL);
	} else {
		FUZZ_ASSERT(cfg.db_port >= 1 && cfg.db_port <= 65535);
		FUZZ_ASSERT(cfg.max_post_records >= 1 && cfg.max_post_records <= 10000);
		FUZZ_ASSERT(cfg.public_url == NULL ||
			    cfg.public_url[strlen(cfg.public_url) - 1] == '/');
		FUZZ_ASSERT(cfg.captcha_secret == NULL || cfg.captcha_secret[0] != '\0');
	}
	config_free(&cfg);
	return 0;
}
