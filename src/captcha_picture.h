/*
 * captcha_picture.h - the picture of a CAPTCHA answer: letters drawn,
 * scaled and tilted over clutter with libgd, as a PNG.
 */
#ifndef WEAVE_CAPTCHA_PICTURE_H
#define WEAVE_CAPTCHA_PICTURE_H

#include <stddef.h>

/* The picture's size in pixels (the page names it in <img>). */
#define CAPTCHA_IMAGE_WIDTH 220
#define CAPTCHA_IMAGE_HEIGHT 70

/*
 * Draw answer (1 to 12 characters) as a PNG with libgd. Returns the
 * image and its size in *len, or NULL (logged; *len is 0). The memory
 * belongs to libgd: release it with captcha_image_free() (gdFree),
 * never free().
 */
unsigned char *captcha_image_png(const char *answer, size_t *len);
void captcha_image_free(unsigned char *png);

#endif
