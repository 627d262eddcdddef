/* mail.c - send a message through the sendmail command. */
#include "mail.h"

#include <signal.h>
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
	/* A command that is missing or exits early closes the pipe: that is
	 * its exit status to report below, not a SIGPIPE to die of. */
	struct sigaction ignore, saved;
	memset(&ignore, 0, sizeof ignore);
	ignore.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ignore, &saved);
	FILE *p = popen(command, "w");
	if (p == NULL) {
		sigaction(SIGPIPE, &saved, NULL);
		log_error("cannot start mail command '%s'", command);
		return -1;
	}
	fprintf(p, "From: %s\nTo: %s\nSubject: %s\nDate: %s\n"
		   "MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n"
		   "Content-Transfer-Encoding: 8bit\nAuto-Submitted: auto-generated\n\n%s",
		from, to, subject, date, body);
	int status = pclose(p);
	sigaction(SIGPIPE, &saved, NULL);
	if (status == -1) {
		log_error("mail command '%s': cannot tell whether it ran", command);
		return -1;
	}
	if (WIFSIGNALED(status)) {
		log_error("mail command '%s' was killed by signal %d", command, WTERMSIG(status));
		return -1;
	}
	if (WEXITSTATUS(status) == 127) {
		/* The shell's "not found": no MTA on this host. */
		log_error("mail command '%s' was not found (exit 127): install a mail "
			  "transfer agent or set sendmail_command ('weave-admin check' "
			  "checks it)", command);
		return -1;
	}
	if (WEXITSTATUS(status) != 0) {
		log_error("mail command '%s' failed with exit status %d", command,
			  WEXITSTATUS(status));
		return -1;
	}
	return 0;
}
