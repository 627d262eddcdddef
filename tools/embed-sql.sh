#!/bin/sh
# Turn an SQL file into a C string constant (weave_schema_sql) so that
# weave-admin carries the schema it installs.
set -e
printf '/* Generated from %s by embed-sql.sh; do not edit. */\n' "$(basename "$1")"
printf 'const char weave_schema_sql[] =\n'
sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$/\\n"/' "$1"
printf ';\n'
