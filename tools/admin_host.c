/* admin_host.c - what weave-admin setup and check need from the host: programs, the Apache user, Apache's files. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admin.h"
#include "util.h"

int run_program(const char *const argv[], struct buf *output)
{
	int pipefd[2] = { -1, -1 };
	if (output != NULL && pipe(pipefd) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		if (output != NULL) {
			close(pipefd[0]);
			close(pipefd[1]);
		}
		return -1;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		if (output != NULL) {
			dup2(pipefd[1], STDOUT_FILENO);
			dup2(pipefd[1], STDERR_FILENO);
			close(pipefd[0]);
			close(pipefd[1]);
		}
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (output != NULL) {
		char chunk[4096];
		ssize_t n;
		close(pipefd[1]);
		while ((n = read(pipefd[0], chunk, sizeof chunk)) > 0 ||
		       (n < 0 && errno == EINTR))
			if (n > 0)
				buf_append(output, chunk, (size_t)n); /* beyond max: cut */
		close(pipefd[0]);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool program_exists(const char *name)
{
	if (strchr(name, '/') != NULL)
		return access(name, X_OK) == 0;
	const char *path = getenv("PATH");
	char dirs[4096], file[4200];
	snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/sbin",
		 path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d != NULL;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(file, sizeof file, "%s/%s", d, name);
		if (access(file, X_OK) == 0)
			return true;
	}
	return false;
}

const char *apache_ctl(void)
{
	if (program_exists("apache2ctl"))
		return "apache2ctl";
	if (program_exists("apachectl"))
		return "apachectl";
	return NULL;
}

/* The value of "export NAME=value" in Debian's /etc/apache2/envvars. */
static bool envvars_value(const char *name, char *out, size_t cap)
{
	FILE *f = fopen("/etc/apache2/envvars", "r");
	char line[512];
	size_t len = strlen(name);
	bool found = false;
	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof line, f) != NULL) {
		const char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "export ", 7) == 0)
			p += 7;
		if (strncmp(p, name, len) != 0 || p[len] != '=')
			continue;
		p += len + 1;
		size_t n = strcspn(p, " \t\r\n#\"'$");
		if (n > 0 && n < cap) {
			memcpy(out, p, n);
			out[n] = '\0';
			found = true;
		}
	}
	fclose(f);
	return found;
}

int apache_user(const char *given, struct apache_user *u)
{
	memset(u, 0, sizeof *u);
	if (given != NULL)
		snprintf(u->name, sizeof u->name, "%s", given);
	else if (!envvars_value("APACHE_RUN_USER", u->name, sizeof u->name)) {
		/* Debian's default, then the Red Hat and FreeBSD ones. */
		static const char *const names[] = { "www-data", "apache", "www", NULL };
		for (size_t i = 0; names[i] != NULL && u->name[0] == '\0'; i++)
			if (getpwnam(names[i]) != NULL)
				snprintf(u->name, sizeof u->name, "%s", names[i]);
	}
	struct passwd *pw = u->name[0] ? getpwnam(u->name) : NULL;
	if (pw == NULL)
		return -1;
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	char group[64];
	struct group *gr = NULL;
	if (given == NULL && envvars_value("APACHE_RUN_GROUP", group, sizeof group))
		gr = getgrnam(group);
	if (gr != NULL)
		u->gid = gr->gr_gid;
	gr = getgrgid(u->gid);
	snprintf(u->group, sizeof u->group, "%s", gr ? gr->gr_name : u->name);
	return 0;
}

int as_apache_user(const struct apache_user *u, int (*fn)(void *ctx), void *ctx)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(u->gid) != 0 || setuid(u->uid) != 0)
			_exit(2);
		_exit(fn(ctx) == 0 ? 0 : 1);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* ---- Apache's loaded configuration ------------------------------------------- */

/* Next blank-separated word of *p (double quotes removed) into out. */
static bool next_word(const char **p, char *out, size_t cap)
{
	size_t n = 0;
	while (**p == ' ' || **p == '\t')
		(*p)++;
	if (**p == '\0' || **p == '\n' || **p == '\r')
		return false;
	bool quoted = **p == '"';
	if (quoted)
		(*p)++;
	while (**p != '\0' && **p != '\n' && **p != '\r' &&
	       (quoted ? **p != '"' : (**p != ' ' && **p != '\t'))) {
		if (n + 1 < cap)
			out[n++] = **p;
		(*p)++;
	}
	if (quoted && **p == '"')
		(*p)++;
	out[n] = '\0';
	return true;
}

static void scan_file(const char *path, struct apache_view *v)
{
	FILE *f = fopen(path, "r");
	char line[1024], word[512], arg1[512], arg2[512];
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		const char *p = line;
		if (!next_word(&p, word, sizeof word) || word[0] == '#')
			continue;
		arg1[0] = arg2[0] = '\0';
		next_word(&p, arg1, sizeof arg1);
		next_word(&p, arg2, sizeof arg2);
		size_t l2 = strlen(arg2);
		if (strcasecmp(word, "Alias") == 0 && l2 >= 10 &&
		    strcmp(arg2 + l2 - 10, "weave.fcgi") == 0 && v->alias_target[0] == '\0') {
			snprintf(v->mount, sizeof v->mount, "%s", arg1);
			snprintf(v->alias_target, sizeof v->alias_target, "%s", arg2);
			snprintf(v->snippet, sizeof v->snippet, "%s", path);
		} else if (strcasecmp(word, "AllowEncodedSlashes") == 0) {
			if (strcasecmp(arg1, "NoDecode") == 0)
				v->encoded_slashes_nodecode = true;
		} else if (strcasecmp(word, "FcgidMaxRequestLen") == 0) {
			int64_t n;
			if (parse_int64(arg1, 0, INT64_MAX, &n) == 0)
				v->fcgid_max_request_len = n;
		} else if (strcasecmp(word, "SSLCertificateFile") == 0 && v->certificate[0] == '\0') {
			snprintf(v->certificate, sizeof v->certificate, "%s", arg1);
		} else if (strcasecmp(word, "FcgidPassHeader") == 0 && v->settings_file[0] == '\0') {
			snprintf(v->settings_file, sizeof v->settings_file, "%s", path);
		} else if (strcasecmp(word, "FcgidInitialEnv") == 0 &&
			   strcmp(arg1, "WEAVE_CONFIG") == 0) {
			snprintf(v->weave_config, sizeof v->weave_config, "%s", arg2);
		}
	}
	fclose(f);
}

/*
 * The lines of apache2ctl -t's output that say what is wrong: "Syntax
 * error on line N of FILE:" and the reason after it, never the list of
 * included files that DUMP_INCLUDES prints before them.
 */
static void configtest_error(const char *out, struct apache_view *v)
{
	const char *p = out, *found = NULL;
	for (; *p != '\0' && found == NULL; p += strcspn(p, "\n"), p += *p == '\n') {
		bool listing = strncmp(p, "Included configuration files", 28) == 0 ||
			       p[0] == ' ' || p[0] == '\t' || p[0] == '\n';
		if (!listing)
			found = p;
	}
	if (found == NULL)
		found = out;
	size_t n = strcspn(found, "\n");
	char first[320];
	snprintf(first, sizeof first, "%.*s", (int)(n < 300 ? n : 300), found);
	if (found[n] == '\n' && strstr(first, "Syntax error") != NULL)
		n += 1 + strcspn(found + n + 1, "\n"); /* and the reason, on the next line */
	snprintf(v->configtest_error, sizeof v->configtest_error, "%.*s",
		 (int)(n < sizeof v->configtest_error - 1 ? n : sizeof v->configtest_error - 1),
		 found);
	for (char *c = v->configtest_error; *c != '\0'; c++)
		if (*c == '\n')
			*c = ' ';
}

int apache_view_load(struct apache_view *v)
{
	memset(v, 0, sizeof *v);
	v->fcgid_max_request_len = -1;
	const char *ctl = apache_ctl();
	if (ctl == NULL)
		return -1;
	struct buf out;
	buf_init(&out, 1024 * 1024);
	const char *argv[] = { ctl, "-t", "-D", "DUMP_INCLUDES", NULL };
	int rc = run_program(argv, &out);
	v->configtest_ok = rc == 0;
	if (rc != 0)
		configtest_error(out.data ? out.data : "", v);
	for (char *save = NULL, *line = out.data ? strtok_r(out.data, "\n", &save) : NULL;
	     line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *path = strstr(line, ") /");
		if (path != NULL && strchr(line, '(') < path)
			scan_file(path + 2, v);
	}
	buf_free(&out);
	return 0;
}
