/*
 * reset_code.h - password-reset codes: 16 characters from an alphabet
 * with no look-alikes (no 0/O, no 1/I/L), shown in four groups of four
 * ("7KQX-M2AH-..."). 31^16 codes: about 79 bits, so guessing one is
 * hopeless however many addresses try; throttle.h only keeps the
 * guessing from costing us. People copy codes by hand, so a typed code
 * is read in any case, with or without dashes and blanks.
 */
#ifndef WEAVE_RESET_CODE_H
#define WEAVE_RESET_CODE_H

#define RESET_CODE_ALPHABET "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
#define RESET_CODE_CHARS 16
#define RESET_CODE_TEXT_MAX 20 /* "XXXX-XXXX-XXXX-XXXX" and its NUL */

/* A fresh random code, grouped with dashes. 0, or -1 when no randomness. */
int reset_code_make(char out[RESET_CODE_TEXT_MAX]);

/*
 * The typed code in its grouped upper-case form: blanks and dashes are
 * dropped, letters upper-cased. -1 when the rest is not 16 characters of
 * the alphabet.
 */
int reset_code_normalise(const char *typed, char out[RESET_CODE_TEXT_MAX]);

/* SHA-256 of the normalised code (what the database keeps), or -1. */
int reset_code_hash(const char *typed, unsigned char hash[32]);

#endif
