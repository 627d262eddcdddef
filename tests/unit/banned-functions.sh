#!/bin/sh
# Fail when a banned C function (docs/HACKING.md, Code conventions)
# appears in the sources.
# Bare strtol/strtoul are banned too: use parse_int64() from util.c.
set -u
root=${top_srcdir:-$(dirname "$0")/../..}
pattern='\<(atoi|atol|atoll|sprintf|vsprintf|strcpy|strcat|strncpy|strtok|gets|sscanf|strtol|strtoll|strtoul|strtoull)[[:space:]]*\('
found=$(grep -nE "$pattern" "$root"/src/*.c "$root"/src/*.h "$root"/tools/*.c 2>/dev/null)
if [ -n "$found" ]; then
	echo "banned functions used (see docs/HACKING.md, Code conventions):"
	echo "$found"
	exit 1
fi
echo "no banned functions in src/ and tools/"
exit 0
