/* captcha_picture.c - draw a CAPTCHA answer as a PNG with libgd. */
#include "captcha_picture.h"

#include <string.h>

#include <gd.h>
#include <gdfontg.h>
#include <openssl/rand.h>

#include "log.h"

/* Picture geometry: gdFontGiant glyphs (9x15) drawn 3x, then tilted. */
#define IMG_W CAPTCHA_IMAGE_WIDTH
#define IMG_H CAPTCHA_IMAGE_HEIGHT
#define GLYPH_SCALE 3

/*
 * A number in [0, n) for placing and colouring things; not secret (the
 * answer is chosen in captcha_token.c), so a small modulo bias does not
 * matter. Falls back to 0.
 */
static int jitter(unsigned n)
{
	unsigned char b[2];
	if (n <= 1 || RAND_bytes(b, sizeof b) != 1)
		return 0;
	return (int)((((unsigned)b[0] << 8) | b[1]) % n);
}

static int random_colour(gdImagePtr im, int lo, int hi)
{
	unsigned span = (unsigned)(hi - lo + 1);
	return gdImageColorAllocate(im, lo + jitter(span), lo + jitter(span),
				    lo + jitter(span));
}

/* One glyph, scaled up on a transparent tile and tilted onto im. */
static int draw_glyph(gdImagePtr im, gdFontPtr font, char c, int cx, int cy)
{
	int w = font->w, h = font->h;
	int sw = w * GLYPH_SCALE, sh = h * GLYPH_SCALE;
	gdImagePtr small = gdImageCreateTrueColor(w, h);
	gdImagePtr big = gdImageCreateTrueColor(sw, sh);
	int rc = -1;

	if (small == NULL || big == NULL)
		goto done;
	gdImageAlphaBlending(small, 0);
	gdImageAlphaBlending(big, 0);
	gdImageSaveAlpha(big, 1);
	int clear = gdTrueColorAlpha(255, 255, 255, gdAlphaTransparent);
	gdImageFilledRectangle(small, 0, 0, w - 1, h - 1, clear);
	gdImageFilledRectangle(big, 0, 0, sw - 1, sh - 1, clear);
	int ink = gdTrueColor(jitter(110), jitter(110), jitter(140));
	gdImageChar(small, font, 0, 0, (unsigned char)c, ink);
	gdImageCopyResampled(big, small, 0, 0, 0, 0, sw, sh, w, h);
	gdImageCopyRotated(im, big, cx, cy, 0, 0, sw, sh, jitter(51) - 25);
	rc = 0;
done:
	if (small != NULL)
		gdImageDestroy(small);
	if (big != NULL)
		gdImageDestroy(big);
	return rc;
}

unsigned char *captcha_image_png(const char *answer, size_t *len)
{
	gdFontPtr font = gdFontGetGiant();
	gdImagePtr im = gdImageCreateTrueColor(IMG_W, IMG_H);
	unsigned char *png = NULL;
	size_t n = answer ? strlen(answer) : 0;
	int size = 0;

	*len = 0;
	if (im == NULL || n == 0 || n > 12)
		goto done;
	gdImageAlphaBlending(im, 1);
	gdImageFilledRectangle(im, 0, 0, IMG_W - 1, IMG_H - 1,
			       random_colour(im, 225, 255));
	/* Faint clutter behind the letters. */
	for (int i = 0; i < 6; i++)
		gdImageLine(im, jitter(IMG_W), jitter(IMG_H), jitter(IMG_W),
			    jitter(IMG_H), random_colour(im, 150, 220));

	int step = (IMG_W - 20) / (int)n;
	for (size_t i = 0; i < n; i++) {
		int cx = 10 + step * (int)i + step / 2 + jitter(7) - 3;
		int cy = IMG_H / 2 + jitter(13) - 6;
		if (draw_glyph(im, font, answer[i], cx, cy) < 0)
			goto done;
	}

	/* Lines and dots across the letters. */
	gdImageSetThickness(im, 2);
	for (int i = 0; i < 3; i++)
		gdImageLine(im, jitter(30), jitter(IMG_H), IMG_W - 1 - jitter(30),
			    jitter(IMG_H), random_colour(im, 60, 160));
	gdImageSetThickness(im, 1);
	for (int i = 0; i < 400; i++)
		gdImageSetPixel(im, jitter(IMG_W), jitter(IMG_H),
				random_colour(im, 40, 230));

	png = gdImagePngPtr(im, &size);
	if (png != NULL && size > 0)
		*len = (size_t)size;
done:
	if (png == NULL)
		log_error("captcha: libgd could not draw the picture");
	if (im != NULL)
		gdImageDestroy(im);
	return png;
}

void captcha_image_free(unsigned char *png)
{
	if (png != NULL)
		gdFree(png);
}

