# weave-server: remove expired records and record history once a day
# (weave-admin(8), purge). Quiet unless something fails; the log is
# rotated by /etc/logrotate.d/weave-server.
MAILTO=root
PATH=/usr/sbin:/usr/bin:/sbin:/bin
23 4 * * * root [ -r /etc/weave/weave.conf ] && weave-admin purge --quiet >>/var/log/weave-server/purge.log 2>&1
