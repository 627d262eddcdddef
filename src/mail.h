/*
 * mail.h - hand one message to the configured sendmail command
 * (default "/usr/sbin/sendmail -t -i"), which reads the recipients from
 * the To: header. The command line comes from weave.conf only; client
 * data goes into the message, never into the command.
 */
#ifndef WEAVE_MAIL_H
#define WEAVE_MAIL_H

/*
 * Returns 0 when the command accepted the message (exit status 0), -1
 * otherwise (logged). Header values must be single lines (validated
 * addresses and fixed subjects).
 */
int mail_send(const char *command, const char *from, const char *to,
	      const char *subject, const char *body);

#endif
