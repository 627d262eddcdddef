/* backup_names.c - the --user and --users-file lists of backup and restore. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup_names.h"
#include "util.h"

/* Names files are short; a longer line is not a name. */
#define NAME_LINE_MAX 512
#define NAMES_MAX 1000000 /* sorted: lookups stay cheap */

static int add(struct backup_names *n, const char *given)
{
	char stored[USERNAME_MAX + 1];
	int rc = account_name(given, stored, NULL);
	if (rc != EXIT_OK)
		return rc;
	if (n->count == NAMES_MAX)
		return fail(EXIT_USAGE, "more than %d account names", NAMES_MAX);
	if (n->count % 64 == 0)
		n->at = xrealloc(n->at, (n->count + 64) * sizeof *n->at);
	memset(&n->at[n->count], 0, sizeof n->at[n->count]);
	memcpy(n->at[n->count].name, stored, sizeof stored);
	n->count++;
	return EXIT_OK;
}

static int add_list(struct backup_names *n, const char *list)
{
	char *copy = xstrdup(list);
	int rc = EXIT_OK;
	char *p = copy;
	while (rc == EXIT_OK && p != NULL) {
		char *comma = strchr(p, ',');
		if (comma != NULL)
			*comma = '\0';
		if (*p == '\0')
			rc = usage_error("--user: an empty name in '%s'", list);
		else
			rc = add(n, p);
		p = comma ? comma + 1 : NULL;
	}
	free(copy);
	return rc;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t len = strlen(s);
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r' ||
			   s[len - 1] == '\n'))
		s[--len] = '\0';
	return s;
}

static int add_file(struct backup_names *n, const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	char line[NAME_LINE_MAX];
	size_t line_no = 0;
	int rc = EXIT_OK;
	if (f == NULL)
		return fail(EXIT_FAILED, "cannot open %s: %s", path, strerror(errno));
	while (rc == EXIT_OK && fgets(line, sizeof line, f) != NULL) {
		line_no++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			rc = fail(EXIT_FAILED, "%s:%zu: line too long for a name", path, line_no);
			break;
		}
		char *name = trim(line);
		if (*name != '\0' && *name != '#')
			rc = add(n, name);
	}
	if (rc == EXIT_OK && ferror(f))
		rc = fail(EXIT_FAILED, "cannot read %s: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct backup_name *)a)->name,
		      ((const struct backup_name *)b)->name);
}

static void sort_unique(struct backup_names *n)
{
	size_t kept = 0;
	if (n->count == 0)
		return;
	qsort(n->at, n->count, sizeof *n->at, by_name);
	for (size_t i = 1; i < n->count; i++)
		if (strcmp(n->at[i].name, n->at[kept].name) != 0)
			n->at[++kept] = n->at[i];
	n->count = kept + 1;
}

int backup_names_get(const struct args *a, struct backup_names *n)
{
	int rc = EXIT_OK;
	memset(n, 0, sizeof *n);
	if (has_opt(a, OPT_USER))
		rc = add_list(n, a->opt[OPT_USER]);
	if (rc == EXIT_OK && has_opt(a, OPT_USERS_FILE)) {
		rc = add_file(n, a->opt[OPT_USERS_FILE]);
		if (rc == EXIT_OK && n->count == 0)
			rc = fail(EXIT_FAILED, "%s names no account", a->opt[OPT_USERS_FILE]);
	}
	if (rc != EXIT_OK)
		backup_names_free(n);
	sort_unique(n);
	return rc;
}

long backup_names_find(const struct backup_names *n, const char *name)
{
	struct backup_name key;
	if (n->count == 0 || strlen(name) > USERNAME_MAX)
		return -1;
	snprintf(key.name, sizeof key.name, "%s", name);
	const struct backup_name *hit = bsearch(&key, n->at, n->count, sizeof *n->at, by_name);
	return hit != NULL ? (long)(hit - n->at) : -1;
}

void backup_names_free(struct backup_names *n)
{
	free(n->at);
	memset(n, 0, sizeof *n);
}
