/* captcha.c - the CAPTCHA check of registration and the captcha_html page. */
#include "captcha.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "buf.h"
#include "captcha_picture.h"
#include "captcha_remote.h"
#include "config.h"
#include "db_captcha.h"
#include "html.h"
#include "log.h"
#include "util.h"

#define PAGE_MAX (256u * 1024)

enum captcha_verdict captcha_verify(const struct config *cfg,
				    const char *challenge, const char *response,
				    const char *remote_ip, int64_t now)
{
	unsigned char nonce[CAPTCHA_NONCE_LEN];
	int64_t expires = 0;

	if (challenge == NULL || challenge[0] == '\0' || response == NULL ||
	    response[0] == '\0')
		return CAPTCHA_WRONG;

	if (cfg->captcha_verify_url != NULL && cfg->captcha_verify_url[0] != '\0') {
		if (strnlen(challenge, CAPTCHA_CHALLENGE_MAX + 1) >
		    CAPTCHA_CHALLENGE_MAX)
			return CAPTCHA_MALFORMED;
		if (strnlen(response, CAPTCHA_RESPONSE_MAX + 1) >
		    CAPTCHA_RESPONSE_MAX)
			return CAPTCHA_WRONG;
		return captcha_remote_verify(cfg, challenge, response, remote_ip);
	}

	if (cfg->captcha_secret == NULL || cfg->captcha_secret[0] == '\0') {
		log_error("captcha: cannot verify: captcha_secret is not set in "
			  "weave.conf; set captcha_secret to a long random string");
		return CAPTCHA_UNAVAILABLE;
	}
	enum captcha_verdict v = captcha_token_check(cfg->captcha_secret, challenge,
						     response, now, nonce, &expires);
	if (expires == 0)
		return v; /* not one of ours, or expired: nothing to spend */

	/*
	 * One answer per challenge, right or wrong, as reCAPTCHA did: else a
	 * script could try answers against one picture for its whole life.
	 */
	enum db_status st = db_captcha_mark_used(nonce, sizeof nonce, expires, now);
	switch (st) {
	case DB_OK:
		return v;
	case DB_CONFLICT:
		return CAPTCHA_REPLAYED;
	default:
		log_error("captcha: cannot record the used challenge: %s",
			  db_status_text(st));
		return v == CAPTCHA_OK ? CAPTCHA_UNAVAILABLE : v;
	}
}

/* ---- page ------------------------------------------------------------- */

/* Sized for the wizard's frame, hence not html_page()'s look. */
static const char page_style[] =
	"body { font-family: sans-serif; color: #222; background: #fff; margin: 0; padding: 10px; }\n"
	"img { display: block; border: 1px solid #bbb; border-radius: 4px; margin: 0 0 8px; }\n"
	"label { display: block; margin: 0 0 4px; }\n"
	"input[type=text] { font-size: 1.2em; padding: 4px; width: 10em; letter-spacing: 0.1em; }\n"
	".note { color: #555; font-size: 0.9em; margin: 6px 0 0; }\n"
	"a { color: #0a58a5; }\n";

/* The two inputs the wizard reads by id, with the challenge value. */
static void page_inputs(struct buf *b, const char *challenge, const char *label)
{
	buf_puts(b, "<input type=\"hidden\" id=\"recaptcha_challenge_field\" "
		    "name=\"recaptcha_challenge_field\" value=\"");
	html_escape(b, challenge);
	buf_puts(b, "\">\n<label for=\"recaptcha_response_field\">");
	html_escape(b, label);
	buf_puts(b, "</label>\n<input type=\"text\" id=\"recaptcha_response_field\" "
		    "name=\"recaptcha_response_field\" autocomplete=\"off\" "
		    "autocapitalize=\"characters\" spellcheck=\"false\">\n");
}

/* The picture and the token of a fresh local challenge; -1 when unavailable. */
static int page_local(const struct config *cfg, struct buf *b)
{
	char token[CAPTCHA_TOKEN_SIZE];
	char answer[CAPTCHA_ANSWER_LEN + 1];
	unsigned char *png = NULL;
	unsigned char *b64 = NULL;
	size_t png_len = 0;
	int rc = -1;

	if (captcha_new(cfg, now_seconds(), token, sizeof token, answer,
			sizeof answer) < 0)
		return -1;
	png = captcha_image_png(answer, &png_len);
	OPENSSL_cleanse(answer, sizeof answer);
	if (png == NULL || png_len > INT32_MAX / 2)
		goto done;
	b64 = xmalloc(4 * ((png_len + 2) / 3) + 1);
	EVP_EncodeBlock(b64, png, (int)png_len);

	buf_puts(b, "<p><img src=\"data:image/png;base64,");
	buf_puts(b, (const char *)b64);
	buf_printf(b, "\" width=\"%d\" height=\"%d\" alt=\"Six letters and digits "
		      "to type below\"></p>\n",
		   CAPTCHA_IMAGE_WIDTH, CAPTCHA_IMAGE_HEIGHT);
	page_inputs(b, token, "Type the characters you see in the picture:");
	buf_puts(b, "<p class=\"note\">Upper or lower case, either is fine. "
		    "Hard to read? <a href=\"captcha_html\">New picture</a></p>\n");
	rc = 0;
done:
	free(b64);
	captcha_image_free(png);
	return rc;
}

int misc_captcha_html(struct request *req, struct response *resp)
{
	const struct config *cfg = req->cfg;
	struct buf page;

	buf_init(&page, PAGE_MAX);
	html_open(&page, "Weave: are you human?", page_style);
	if (!cfg->captcha) {
		page_inputs(&page, "", "No check needed on this server; leave this "
				       "field empty:");
	} else if (cfg->captcha_verify_url != NULL &&
		   cfg->captcha_verify_url[0] != '\0') {
		/* The third-party widget needs script, which this page never
		 * runs: show the site key the verifier expects and keep the ids. */
		page_inputs(&page, cfg->captcha_public_key ? cfg->captcha_public_key : "",
			    "Your answer for this server's CAPTCHA service:");
		buf_puts(&page, "<p class=\"note\">This server checks answers with an "
				"external CAPTCHA service");
		if (cfg->captcha_public_key != NULL) {
			buf_puts(&page, " (site key <code>");
			html_escape(&page, cfg->captcha_public_key);
			buf_puts(&page, "</code>)");
		}
		buf_puts(&page, ".</p>\n");
	} else if (page_local(cfg, &page) < 0) {
		buf_free(&page);
		resp_error(resp, 503, WEAVE_ERR_NONE);
		return 503;
	}
	/* The picture is a data: URL, and the 1.0 wizard frames this page. */
	html_send(resp, 200, &page, HTML_ALLOW_DATA_IMAGES | HTML_ALLOW_FRAMING);
	buf_free(&page);
	return 200;
}
