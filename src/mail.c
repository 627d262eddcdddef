/* mail.c - send a message through the sendmail command. */
#include "mail.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "log.h"

static bool one_line(const char *s)
{
	return s != NULL && strpbrk(s, "\r\n") == NULL;
}

int mail_send(const char *command, const char *from, const char *to,
	      const char *subject, const char *body)
{
	char date[64];
	time_t now = time(NULL);
	struct tm tm;

	if (!one_line(from) || !one_line(to) || !one_line(subject)) {
		log_error("refusing to send mail with a multi-line header");
		return -1;
	}
	gmtime_r(&now, &tm);
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm);
	fflush(NULL);
	FILE *p = popen(command, "w");
	if (p == NULL) {
		log_error("cannot start mail command '%s'", command);
		return -1;
	}
	fprintf(p, "From: %s\nTo: %s\nSubject: %s\nDate: %s\n"
		   "MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n"
		   "Content-Transfer-Encoding: 8bit\nAuto-Submitted: auto-generated\n\n%s",
		from, to, subject, date, body);
	int status = pclose(p);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_error("mail command '%s' failed (status %d)", command, status);
		return -1;
	}
	return 0;
}
