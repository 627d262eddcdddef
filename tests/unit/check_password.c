/* check_password.c - unit tests for src/password.c. */
#include <stdio.h>
#include <string.h>

#include "check_suites.h"
#include "password.h"

/* Low scrypt cost so the suite stays fast (N = 1024, 1 MiB). */
#define COST 10

static enum password_verdict verify(const char *password, const char *stored,
				    int want)
{
	return password_verify(password, strlen(password), stored, want);
}

/* ---- scrypt: our own hashes ------------------------------------------- */

START_TEST(test_hash_verify)
{
	char hash[PASSWORD_HASH_MAX];
	const char *pw = "correct horse battery";
	memset(hash, 'X', sizeof hash);
	ck_assert_int_eq(password_hash(pw, strlen(pw), COST, hash, sizeof hash), 0);
	ck_assert_ptr_nonnull(memchr(hash, '\0', sizeof hash));
	ck_assert_msg(strncmp(hash, "$scrypt$ln=10,r=8,p=1$", 22) == 0, "%s", hash);
	/* "$scrypt$ln=10,r=8,p=1$" + 24 salt + "$" + 44 key. */
	ck_assert_uint_eq(strlen(hash), 22 + 24 + 1 + 44);
	ck_assert_int_eq(verify(pw, hash, COST), PASSWORD_OK);
	ck_assert_int_eq(verify(pw, hash, COST - 1), PASSWORD_OK);
	ck_assert_int_eq(verify("correct horse batterY", hash, COST), PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("correct horse batter", hash, COST), PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("correct horse battery ", hash, COST), PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("", hash, COST), PASSWORD_MISMATCH);
}
END_TEST

START_TEST(test_hash_rehash_when_weaker)
{
	char hash[PASSWORD_HASH_MAX];
	ck_assert_int_eq(password_hash("pw123456", 8, COST, hash, sizeof hash), 0);
	ck_assert_int_eq(verify("pw123456", hash, COST + 1), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("pw123456", hash, 15), PASSWORD_OK_REHASH);
	/* A wrong password is a mismatch whatever the cost. */
	ck_assert_int_eq(verify("pw12345", hash, COST + 1), PASSWORD_MISMATCH);
}
END_TEST

START_TEST(test_hash_salted)
{
	char a[PASSWORD_HASH_MAX], b[PASSWORD_HASH_MAX];
	ck_assert_int_eq(password_hash("same", 4, COST, a, sizeof a), 0);
	ck_assert_int_eq(password_hash("same", 4, COST, b, sizeof b), 0);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq(verify("same", a, COST), PASSWORD_OK);
	ck_assert_int_eq(verify("same", b, COST), PASSWORD_OK);
}
END_TEST

START_TEST(test_hash_binary_password)
{
	char hash[PASSWORD_HASH_MAX];
	ck_assert_int_eq(password_hash("a\0b", 3, COST, hash, sizeof hash), 0);
	ck_assert_int_eq(password_verify("a\0b", 3, hash, COST), PASSWORD_OK);
	ck_assert_int_eq(password_verify("a\0c", 3, hash, COST), PASSWORD_MISMATCH);
	ck_assert_int_eq(password_verify("a", 1, hash, COST), PASSWORD_MISMATCH);

	ck_assert_int_eq(password_hash("", 0, COST, hash, sizeof hash), 0);
	ck_assert_int_eq(password_verify("", 0, hash, COST), PASSWORD_OK);
	ck_assert_int_eq(password_verify("x", 1, hash, COST), PASSWORD_MISMATCH);
}
END_TEST

START_TEST(test_hash_small_buffer)
{
	char hash[40];
	ck_assert_int_eq(password_hash("pw", 2, COST, hash, sizeof hash), -1);
	/* One byte short of the 91 characters and the NUL. */
	char exact[92];
	ck_assert_int_eq(password_hash("pw", 2, COST, exact, 91), -1);
	ck_assert_int_eq(password_hash("pw", 2, COST, exact, 92), 0);
	ck_assert_int_eq(verify("pw", exact, COST), PASSWORD_OK);
}
END_TEST

/*
 * Hashes made independently with Python's hashlib.scrypt, e.g.
 *   s = b"0123456789abcdef"
 *   k = hashlib.scrypt(b"password", salt=s, n=1024, r=8, p=1, dklen=32)
 *   "$scrypt$ln=10,r=8,p=1$" + b64encode(s) + "$" + b64encode(k)
 */
static const char PY_SCRYPT[] =
	"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$"
	"ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=";
/* Same salt, n=1024, r=2, p=2, dklen=16 (the shortest key accepted). */
static const char PY_SCRYPT_R2P2[] =
	"$scrypt$ln=10,r=2,p=2$MDEyMzQ1Njc4OWFiY2RlZg==$eFhXnygovnE2G4VyJs1/zA==";
/* Password "caf\xc3\xa9", salt b"NaCl", n=2048, r=8, p=1, dklen=64. */
static const char PY_SCRYPT_LONG[] =
	"$scrypt$ln=11,r=8,p=1$TmFDbA==$"
	"FlR9KZAMearv7h83Undv+uctuBWGPropx3AQ1/JinI5a4q03iV7Sj4C3HTfJl2viZSWGNC+MA5cTNJSYUFMrFA==";

/* Above cost 14 the work grows through p, memory stays at N = 2^14; a
 * hash's cost is log2(N * p), so the old default (ln=15, p=1) is below
 * the new one (ln=14, p=8) and is re-hashed. */
START_TEST(test_cost_above_14_raises_p)
{
	char hash[PASSWORD_HASH_MAX];
	ck_assert_int_eq(password_hash("pw123456", 8, 16, hash, sizeof hash), 0);
	ck_assert_msg(strncmp(hash, "$scrypt$ln=14,r=8,p=4$", 22) == 0, "%s", hash);
	ck_assert_int_eq(verify("pw123456", hash, 16), PASSWORD_OK);
	ck_assert_int_eq(verify("pw123456", hash, 17), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("pw1234567", hash, 16), PASSWORD_MISMATCH);
	/* Up to 14, p stays 1. */
	ck_assert_int_eq(password_hash("pw123456", 8, 12, hash, sizeof hash), 0);
	ck_assert_msg(strncmp(hash, "$scrypt$ln=12,r=8,p=1$", 22) == 0, "%s", hash);
	/* A foreign hash: ln=10 with p=2 is cost 11, its r=2 (a quarter of
	 * our blocks) makes it 9. */
	ck_assert_int_eq(verify("password", PY_SCRYPT_R2P2, 10), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("password", PY_SCRYPT_R2P2, 9), PASSWORD_OK);
}
END_TEST

START_TEST(test_scrypt_foreign)
{
	ck_assert_int_eq(verify("password", PY_SCRYPT, COST), PASSWORD_OK);
	ck_assert_int_eq(verify("password", PY_SCRYPT, COST + 1), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("Password", PY_SCRYPT, COST), PASSWORD_MISMATCH);

	/* Correct, but less work than cost 10 (r=2): re-hashed at login. */
	ck_assert_int_eq(verify("password", PY_SCRYPT_R2P2, COST), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("passwor", PY_SCRYPT_R2P2, COST), PASSWORD_MISMATCH);

	ck_assert_int_eq(verify("caf\xc3\xa9", PY_SCRYPT_LONG, COST), PASSWORD_OK);
	ck_assert_int_eq(verify("caf\xc3\xa9", PY_SCRYPT_LONG, 11), PASSWORD_OK);
	ck_assert_int_eq(verify("caf\xc3\xa9", PY_SCRYPT_LONG, 12), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("caf\xe9", PY_SCRYPT_LONG, COST), PASSWORD_MISMATCH);
}
END_TEST

START_TEST(test_scrypt_tampered)
{
	/* The parameters are part of the hash: change one, it no longer matches. */
	static const char *const tampered[] = {
		"$scrypt$ln=11,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$"
		"ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=4,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$"
		"ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=8,p=2$MDEyMzQ1Njc4OWFiY2RlZg==$"
		"ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		/* salt "1123456789abcdef" */
		"$scrypt$ln=10,r=8,p=1$MTEyMzQ1Njc4OWFiY2RlZg==$"
		"ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		/* first key byte changed */
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$"
		"AEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		/* last key byte changed */
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$"
		"ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqA=",
	};
	for (size_t i = 0; i < sizeof tampered / sizeof tampered[0]; i++)
		ck_assert_msg(verify("password", tampered[i], COST) == PASSWORD_MISMATCH,
			      "%s", tampered[i]);
}
END_TEST

START_TEST(test_scrypt_bad_hash)
{
	static const char *const bad[] = {
		"$scrypt$",
		"$scrypt$ln=10,r=8,p=1$",
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==",
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$",
		"$scrypt$ln=10,r=8,p=1$$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=8$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$r=8,ln=10,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=abc,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=0,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=-1,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=23,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=99999999,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=0,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=33,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=8,p=0$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=8,p=65$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		/* within each bound, but more than 1 GiB of scrypt memory */
		"$scrypt$ln=21,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=22,r=32,p=16$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=20,r=8,p=2$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10 ,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=1e1,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$n=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10;r=8;p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		/* salt: bad characters, bad length, too long */
		"$scrypt$ln=10,r=8,p=1$!!!!$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg=$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=8,p=1$"
		"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVm"
		"$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		/* key: bad characters, bad length, a third field, too short (15 bytes) */
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2H*Q945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw",
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=$x",
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$AAAAAAAAAAAAAAAAAAAA",
		/* key: 128 characters or more do not fit */
		"$scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"$SCRYPT$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		" $scrypt$ln=10,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(verify("password", bad[i], COST) == PASSWORD_BAD_HASH,
			      "not BAD_HASH: %s", bad[i]);
}
END_TEST

START_TEST(test_other_bad_hash)
{
	static const char *const bad[] = {
		"", "plain", "password", "$2y$10$abcdefghijklmnopqrstuv",
		"{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
		"{ssha}cnC3REOLz15D2CV9RvbxN0KUYbwBAgME/v8Afw==",
		"{CRYPT}xyz",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(verify("password", bad[i], COST) == PASSWORD_BAD_HASH,
			      "not BAD_HASH: %s", bad[i]);
	ck_assert_int_eq(password_verify("password", 8, NULL, COST), PASSWORD_BAD_HASH);
}
END_TEST

/* ---- bcrypt (FSyncMS) and weave-minimal ---------------------------------- */

START_TEST(test_legacy_bcrypt)
{
	/* The published vector of OpenBSD's and John the Ripper's bcrypt
	 * tests ("U*U"), then python3's crypt.crypt() with each prefix. */
	ck_assert_int_eq(verify("U*U", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
				COST), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("U*V", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
				COST), PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("password", "$2y$05$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu",
				COST), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("passwore", "$2y$05$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu",
				COST), PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("caf\xc3\xa9 ok", "$2b$04$ABCDEFGHIJKLMNOPQRSTUudhHK41gkMNGUerPdPFvUmCdd/eE5el.",
				COST), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("password", "$2a$04$012345678901234567890uMvmubphsJ8Q1qwTFNdkcxxmiX0fmA0W",
				COST), PASSWORD_OK_REHASH);
	/* A NUL cannot reach crypt_r: never a match. */
	ck_assert_int_eq(password_verify("password\0x", 10,
					 "$2y$05$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu",
					 COST), PASSWORD_MISMATCH);
}
END_TEST

START_TEST(test_bcrypt_cost_capped)
{
	/* Cost 15 and 31 are refused before any work (31 would run for days). */
	static const char *const bad[] = {
		"$2y$15$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu",
		"$2y$31$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu",
		"$2y$03$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu",
		"$2y$5$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu",
		"$2y$05$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2aw",
		"$2y$05$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awuu",
		"$2y$05$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2aw!",
		"$2x$05$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(verify("password", bad[i], COST) == PASSWORD_BAD_HASH, "%s", bad[i]);
		ck_assert_msg(password_hash_problem(bad[i]) != NULL, "%s", bad[i]);
	}
	ck_assert_str_eq(password_hash_problem(bad[0]), "its bcrypt cost is not 4-14");
	ck_assert_ptr_null(password_hash_problem(
		"$2y$14$abcdefghijklmnopqrstuuWG29KuyeAicPCJODk1zjyGvyQUU2awu"));
}
END_TEST

START_TEST(test_legacy_weave_minimal)
{
	/* python3: hashlib.sha1((SALT + "password").encode()).hexdigest()[:16]
	 * with weave-minimal's SALT, a raw string of 69 characters. */
	ck_assert_int_eq(verify("password", "$weave-minimal$5604ecc1faac78eb", COST),
			 PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("password", "$weave-minimal$5604ECC1FAAC78EB", COST),
			 PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("caf\xc3\xa9", "$weave-minimal$e9e79f161b4e05fa", COST),
			 PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("Password", "$weave-minimal$5604ecc1faac78eb", COST),
			 PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("password", "$weave-minimal$5604ecc1faac78e", COST),
			 PASSWORD_BAD_HASH);
	ck_assert_int_eq(verify("password", "$weave-minimal$5604ecc1faac78ebb", COST),
			 PASSWORD_BAD_HASH);
	ck_assert_int_eq(verify("password", "$weave-minimal$5604ecc1faac78eg", COST),
			 PASSWORD_BAD_HASH);
}
END_TEST

START_TEST(test_scrypt_memory_capped)
{
	/* Each within the old 1 GiB product but over 32 MiB of memory: the
	 * kind of hash that took weave.fcgi to gigabytes. */
	static const char *const huge[] = {
		"$scrypt$ln=20,r=1,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=16,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=15,r=32,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
		"$scrypt$ln=22,r=2,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw=",
	};
	for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
		ck_assert_msg(verify("password", huge[i], COST) == PASSWORD_BAD_HASH, "%s", huge[i]);
		ck_assert_str_eq(password_hash_problem(huge[i]),
				 "its scrypt memory (128 * r * 2^ln) is over 32 MiB");
	}
	/* 32 MiB exactly, and our own dearest setting, pass the check. */
	ck_assert_ptr_null(password_hash_problem(
		"$scrypt$ln=15,r=8,p=1$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw="));
	ck_assert_ptr_null(password_hash_problem(
		"$scrypt$ln=14,r=8,p=64$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw="));
	ck_assert_ptr_nonnull(password_hash_problem(
		"$scrypt$ln=15,r=8,p=64$MDEyMzQ1Njc4OWFiY2RlZg==$ZEBCzLptWM7dhpNJDU2HbQ945ovKHmVEozHkePPbSqw="));
}
END_TEST

START_TEST(test_hash_problem_names_each_scheme)
{
	char fresh[PASSWORD_HASH_MAX];
	ck_assert_int_eq(password_hash("password", 8, COST, fresh, sizeof fresh), 0);
	ck_assert_ptr_null(password_hash_problem(fresh));
	ck_assert_ptr_null(password_hash_problem("5f4dcc3b5aa765d61d8327deb882cf99"));
	/* Three bytes: shorter than a SHA-256 digest, so no login could use it. */
	ck_assert_ptr_nonnull(password_hash_problem("{SSHA-256}abcd"));
	ck_assert_ptr_null(password_hash_problem("$weave-minimal$5604ecc1faac78eb"));
	ck_assert_ptr_nonnull(password_hash_problem(NULL));
	ck_assert_ptr_nonnull(password_hash_problem(""));
	ck_assert_ptr_nonnull(password_hash_problem("plain"));
	ck_assert_ptr_nonnull(password_hash_problem("$weave-minimal$xyz"));
	ck_assert_ptr_nonnull(password_hash_problem("$scrypt$ln=10,r=8,p=1$$"));
}
END_TEST

/* ---- legacy hashes ---------------------------------------------------- */

START_TEST(test_legacy_md5)
{
	/* python3: hashlib.md5(b"password").hexdigest() */
	ck_assert_int_eq(verify("password", "5f4dcc3b5aa765d61d8327deb882cf99", COST),
			 PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("password", "5F4DCC3B5AA765D61D8327DEB882CF99", COST),
			 PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("password", "5f4DCC3b5aa765d61d8327deb882cF99", COST),
			 PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("Password", "5f4dcc3b5aa765d61d8327deb882cf99", COST),
			 PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("password1", "5f4dcc3b5aa765d61d8327deb882cf99", COST),
			 PASSWORD_MISMATCH);
	/* hashlib.md5(b"").hexdigest() */
	ck_assert_int_eq(verify("", "d41d8cd98f00b204e9800998ecf8427e", COST),
			 PASSWORD_OK_REHASH);
	/* Not 32 hex digits: not a hash at all. */
	static const char *const bad[] = {
		"5f4dcc3b5aa765d61d8327deb882cf9",
		"5f4dcc3b5aa765d61d8327deb882cf990",
		"5f4dcc3b5aa765d61d8327deb882cf9g",
		"5f4dcc3b5aa765d61d8327deb882cf9 ",
		" 5f4dcc3b5aa765d61d8327deb882cf9",
		"{MD5}X03MO1qnZdYdgyfeuILPmQ==",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(verify("password", bad[i], COST) == PASSWORD_BAD_HASH,
			      "%s", bad[i]);
}
END_TEST

/*
 * {SSHA}: python3
 *   salt = bytes([1, 2, 3, 4, 0xfe, 0xff, 0, 0x7f])
 *   "{SSHA}" + b64encode(hashlib.sha1(b"password" + salt).digest() + salt)
 */
static const char PY_SSHA[] = "{SSHA}cnC3REOLz15D2CV9RvbxN0KUYbwBAgME/v8Afw==";
/* {SSHA} with a one-byte salt b"S". */
static const char PY_SSHA_SHORT[] = "{SSHA}BxAshMqdmkUghns62hiRpaRabhlT";
/*
 * {SSHA-256}: python3
 *   salt = b"saltsalt"
 *   "{SSHA-256}" + b64encode(hashlib.sha256(b"s3cret pw" + salt).digest() + salt)
 */
static const char PY_SSHA256[] =
	"{SSHA-256}6NcCz6yalPEdu0QQh1lGxyVRlraUiztbVCMrpZYw1g5zYWx0c2FsdA==";

START_TEST(test_legacy_ssha)
{
	ck_assert_int_eq(verify("password", PY_SSHA, COST), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("password", PY_SSHA, 20), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("passwore", PY_SSHA, COST), PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("", PY_SSHA, COST), PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("password", PY_SSHA_SHORT, COST), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("password ", PY_SSHA_SHORT, COST), PASSWORD_MISMATCH);

	ck_assert_int_eq(verify("s3cret pw", PY_SSHA256, COST), PASSWORD_OK_REHASH);
	ck_assert_int_eq(verify("s3cret pW", PY_SSHA256, COST), PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("s3cret", PY_SSHA256, COST), PASSWORD_MISMATCH);

	/* The tag picks the digest: swapped tags do not verify. */
	ck_assert_int_eq(verify("s3cret pw",
				"{SSHA}6NcCz6yalPEdu0QQh1lGxyVRlraUiztbVCMrpZYw1g5zYWx0c2FsdA==",
				COST),
			 PASSWORD_MISMATCH);
	ck_assert_int_eq(verify("password",
				"{SSHA-256}cnC3REOLz15D2CV9RvbxN0KUYbwBAgME/v8Afw==",
				COST),
			 PASSWORD_BAD_HASH);
	/* What verifies, migrate and import may copy; what does not, they refuse. */
	ck_assert_ptr_null(password_hash_problem(PY_SSHA));
	ck_assert_ptr_null(password_hash_problem(PY_SSHA_SHORT));
	ck_assert_ptr_null(password_hash_problem(PY_SSHA256));
	ck_assert_ptr_nonnull(
		password_hash_problem("{SSHA-256}cnC3REOLz15D2CV9RvbxN0KUYbwBAgME/v8Afw=="));
}
END_TEST

START_TEST(test_legacy_ssha_bad)
{
	static const char *const bad[] = {
		"{SSHA}",
		"{SSHA-256}",
		"{SSHA}!!!!",
		"{SSHA}cnC3REOLz15D2CV9RvbxN0KUYbwBAgME/v8Afw=",   /* length */
		"{SSHA}cnC3REOLz15D2CV9RvbxN0KUYbwBAgME/v8Af*==",
		/* the digest alone, no salt */
		"{SSHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
		"{SSHA-256}XohImNooBHFR0OVvjcYpJ3NgPQ1qq73WKhHvch0VQtg=",
		/* more than the 512-byte decode buffer */
		"{SSHA}"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(verify("password", bad[i], COST) == PASSWORD_BAD_HASH,
			      "not BAD_HASH: %.40s", bad[i]);
		ck_assert_msg(password_hash_problem(bad[i]) != NULL, "no problem: %.40s", bad[i]);
	}
}
END_TEST

/* ---- password_is_strong ----------------------------------------------- */

static int strong(const char *password, const char *username)
{
	return password_is_strong(password, strlen(password), username);
}

START_TEST(test_strength_length)
{
	ck_assert_int_eq(strong("", "john"), 0);
	ck_assert_int_eq(strong("a", "john"), 0);
	ck_assert_int_eq(strong("1234567", "john"), 0);
	ck_assert_int_eq(strong("12345678", "john"), 1);
	ck_assert_int_eq(strong("a much longer passphrase", "john"), 1);
	/* Bytes, not characters: 4 two-byte letters are 8 bytes. */
	ck_assert_int_eq(strong("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", "john"), 1);
	ck_assert_int_eq(strong("\xc3\xa9\xc3\xa9\xc3\xa9\xc3", "john"), 0);
	ck_assert_int_eq(strong("12345678", NULL), 1);
	ck_assert_int_eq(strong("1234567", NULL), 0);
	/* Explicit lengths: an embedded NUL counts. */
	ck_assert_int_eq(password_is_strong("1234\0" "567", 8, "john"), 1);
	ck_assert_int_eq(password_is_strong("12345678", 7, "john"), 0);
}
END_TEST

START_TEST(test_new_password_rule)
{
	char longest[PASSWORD_NEW_MAX + 1];
	memset(longest, 'x', sizeof longest);
	ck_assert_int_eq(password_check_new("", 0, "john"), NEW_PASSWORD_EMPTY);
	ck_assert_int_eq(password_check_new("short", 5, "john"), NEW_PASSWORD_WEAK);
	ck_assert_int_eq(password_check_new("JohnSmith", 9, "johnsmith"), NEW_PASSWORD_WEAK);
	ck_assert_int_eq(password_check_new("1234\0" "5678", 9, "john"), NEW_PASSWORD_NUL);
	ck_assert_int_eq(password_check_new(longest, PASSWORD_NEW_MAX, "john"), NEW_PASSWORD_OK);
	ck_assert_int_eq(password_check_new(longest, PASSWORD_NEW_MAX + 1, "john"),
			 NEW_PASSWORD_TOO_LONG);
	ck_assert_int_eq(password_check_new("a fine passphrase", 17, "john"), NEW_PASSWORD_OK);
	/* Every verdict has its own sentence. */
	ck_assert_ptr_nonnull(strstr(password_check_text(NEW_PASSWORD_TOO_LONG), "long"));
	ck_assert_ptr_nonnull(strstr(password_check_text(NEW_PASSWORD_WEAK), "weak"));
	ck_assert_ptr_nonnull(strstr(password_check_text(NEW_PASSWORD_NUL), "NUL"));
}
END_TEST

START_TEST(test_strength_username)
{
	ck_assert_int_eq(strong("johnsmith", "johnsmith"), 0);
	ck_assert_int_eq(strong("JohnSmith", "johnsmith"), 0);
	ck_assert_int_eq(strong("johnsmith", "JOHNSMITH"), 0);
	ck_assert_int_eq(strong("  johnsmith\t", "johnsmith"), 0);
	ck_assert_int_eq(strong("johnsmith", " johnsmith \r\n"), 0);
	ck_assert_int_eq(strong("\tJOHNSMITH ", "  JohnSmith"), 0);
	/* Anything else is strong. */
	ck_assert_int_eq(strong("johnsmith1", "johnsmith"), 1);
	ck_assert_int_eq(strong("johnsmit", "johnsmith"), 1);
	ck_assert_int_eq(strong("john smith", "johnsmith"), 1);
	ck_assert_int_eq(strong("htimsnhoj", "johnsmith"), 1);
	ck_assert_int_eq(strong("johnsmith", ""), 1);
	ck_assert_int_eq(strong("johnsmith", "john"), 1);
	/* Case folding is ASCII only. */
	ck_assert_int_eq(strong("\xc3\x89tienne1", "\xc3\xa9tienne1"), 1);
}
END_TEST

Suite *password_suite(void)
{
	Suite *s = suite_create("password");

	TCase *tc = tcase_create("scrypt");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hash_verify);
	tcase_add_test(tc, test_hash_rehash_when_weaker);
	tcase_add_test(tc, test_hash_salted);
	tcase_add_test(tc, test_cost_above_14_raises_p);
	tcase_add_test(tc, test_hash_binary_password);
	tcase_add_test(tc, test_hash_small_buffer);
	tcase_add_test(tc, test_scrypt_foreign);
	tcase_add_test(tc, test_scrypt_tampered);
	tcase_add_test(tc, test_scrypt_bad_hash);
	tcase_add_test(tc, test_other_bad_hash);
	tcase_add_test(tc, test_scrypt_memory_capped);
	suite_add_tcase(s, tc);

	tc = tcase_create("legacy");
	tcase_add_test(tc, test_legacy_md5);
	tcase_add_test(tc, test_legacy_ssha);
	tcase_add_test(tc, test_legacy_ssha_bad);
	tcase_add_test(tc, test_legacy_bcrypt);
	tcase_add_test(tc, test_bcrypt_cost_capped);
	tcase_add_test(tc, test_legacy_weave_minimal);
	tcase_add_test(tc, test_hash_problem_names_each_scheme);
	suite_add_tcase(s, tc);

	tc = tcase_create("strength");
	tcase_add_test(tc, test_strength_length);
	tcase_add_test(tc, test_strength_username);
	tcase_add_test(tc, test_new_password_rule);
	suite_add_tcase(s, tc);

	return s;
}
