/*
 * backup_names.h - the accounts a backup or restore is limited to:
 * --user NAME[,NAME...] and --users-file FILE (one name a line, '#'
 * comments), each name as stored (account_name(), the one rule).
 * None given: every account.
 */
#ifndef WEAVE_BACKUP_NAMES_H
#define WEAVE_BACKUP_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "admin.h"

struct backup_name {
	char name[USERNAME_MAX + 1];
	bool seen; /* for restore: the name was found in the file */
};

struct backup_names {
	struct backup_name *at; /* sorted by name, no duplicates */
	size_t count;
};

/* EXIT_OK with *n filled (backup_names_free() it), else EXIT_USAGE or
 * EXIT_FAILED with a message. Duplicates are dropped. */
int backup_names_get(const struct args *a, struct backup_names *n);
/* The index of name, or -1. */
long backup_names_find(const struct backup_names *n, const char *name);
void backup_names_free(struct backup_names *n);

#endif
