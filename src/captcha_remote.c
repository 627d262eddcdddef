/* captcha_remote.c - ask a reCAPTCHA-v1-style verifier over libcurl. */
#include "captcha_remote.h"

#include <stdbool.h>
#include <string.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "buf.h"
#include "config.h"
#include "log.h"

#define VERIFY_TIMEOUT_SECONDS 10L
#define VERIFY_REPLY_MAX 4096

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	       c == '\f';
}

static size_t collect_reply(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct buf *b = ctx;
	size_t n = size * nmemb;
	/* Only the first line matters: keep what fits, drop the rest. */
	size_t room = b->len < VERIFY_REPLY_MAX ? VERIFY_REPLY_MAX - b->len : 0;
	buf_append(b, data, n < room ? n : room);
	return n;
}

/* Append "&name=<escaped value>" (no '&' for the first field). */
static int add_field(CURL *curl, struct buf *body, const char *name,
		     const char *value)
{
	char *esc = curl_easy_escape(curl, value ? value : "", 0);
	if (esc == NULL)
		return -1;
	int rc = buf_printf(body, "%s%s=%s", body->len > 0 ? "&" : "", name, esc);
	OPENSSL_cleanse(esc, strlen(esc));
	curl_free(esc);
	return rc;
}

/* A fresh easy handle (libcurl initialised on first use), or NULL. */
static CURL *new_handle(void)
{
	static bool curl_ready;
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			log_error("captcha: libcurl failed to initialise");
			return NULL;
		}
		curl_ready = true;
	}
	CURL *curl = curl_easy_init();
	if (curl == NULL)
		log_error("captcha: libcurl failed to initialise");
	return curl;
}

/* One POST of body to the verifier, its reply into reply; no redirects,
 * http(s) only, bounded in time. */
static void set_request(CURL *curl, const struct config *cfg,
			const struct buf *body, struct buf *reply, char *errbuf)
{
	/* POSTFIELDS sends application/x-www-form-urlencoded. */
	curl_easy_setopt(curl, CURLOPT_URL, cfg->captcha_verify_url);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, VERIFY_TIMEOUT_SECONDS);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect_reply);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, reply);
}

/* The verifier's first line: "true", or "false" and a reason on the next. */
static enum captcha_verdict read_verdict(const struct buf *reply)
{
	const char *line = reply->data ? reply->data : "";
	size_t n = strcspn(line, "\n");
	size_t first = n;
	while (first > 0 && is_blank(line[first - 1]))
		first--;
	if (first == 4 && memcmp(line, "true", 4) == 0)
		return CAPTCHA_OK;
	if (first == 5 && memcmp(line, "false", 5) == 0) {
		const char *why = line[n] == '\n' ? line + n + 1 : "";
		size_t wlen = strcspn(why, "\r\n");
		log_info("captcha: verifier said false (%.*s)",
			 (int)(wlen > 64 ? 64 : wlen), why);
		return CAPTCHA_WRONG;
	}
	log_error("captcha: verifier reply is neither true nor false");
	return CAPTCHA_UNAVAILABLE;
}

enum captcha_verdict captcha_remote_verify(const struct config *cfg,
					   const char *challenge,
					   const char *response,
					   const char *remote_ip)
{
	enum captcha_verdict v = CAPTCHA_UNAVAILABLE;
	char errbuf[CURL_ERROR_SIZE] = "";
	struct buf body, reply;
	long http_status = 0;

	buf_init(&body, 16384);
	buf_init(&reply, VERIFY_REPLY_MAX + 1);
	CURL *curl = new_handle();
	if (curl == NULL)
		goto done;
	if (cfg->captcha_private_key == NULL)
		log_warn("captcha: captcha_verify_url is set but captcha_private_key "
			 "is not");
	if (add_field(curl, &body, "privatekey", cfg->captcha_private_key) < 0 ||
	    add_field(curl, &body, "remoteip", remote_ip) < 0 ||
	    add_field(curl, &body, "challenge", challenge) < 0 ||
	    add_field(curl, &body, "response", response) < 0) {
		log_error("captcha: could not build the verifier request");
		goto done;
	}
	set_request(curl, cfg, &body, &reply, errbuf);
	CURLcode cc = curl_easy_perform(curl);
	if (cc != CURLE_OK) {
		log_error("captcha: verifier at captcha_verify_url unreachable: %s",
			  errbuf[0] != '\0' ? errbuf : curl_easy_strerror(cc));
		goto done;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
	if (http_status != 200) {
		log_error("captcha: verifier answered HTTP %ld", http_status);
		goto done;
	}
	v = read_verdict(&reply);
done:
	if (curl != NULL)
		curl_easy_cleanup(curl);
	buf_free_secret(&body);
	buf_free(&reply);
	return v;
}
