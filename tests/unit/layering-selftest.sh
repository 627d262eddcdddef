#!/bin/bash
# Show that tests/unit/layering.sh can fail: build scratch trees with the
# real docs/HACKING.md and a few files, add one include against a rule per
# case, and expect the check to fail naming that include (and to pass on
# the clean tree and on an allowed exception).
set -u
root=${top_srcdir:-$(dirname "$0")/../..}
root=$(cd "$root" && pwd) || exit 1
check=$root/tests/unit/layering.sh
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

# A clean tree: the router and a db_ file, each including what it may.
clean_tree() {
	local t=$1
	mkdir -p "$t/docs" "$t/src" "$t/tools" "$t/tests/fuzz"
	cp "$root/docs/HACKING.md" "$t/docs/"
	for h in route.h db.h response.h handler.h validate.h; do
		echo "/* $h */" >"$t/src/$h"
	done
	echo "/* db_admin.h */" >"$t/tools/db_admin.h"
	printf '#include "route.h"\n#include "response.h"\n' >"$t/src/route.c"
	printf '#include "db.h"\n' >"$t/src/db_user.c"
	printf '#include "handler.h"\n#include "response.h"\n' >"$t/src/storage_api.c"
	printf '#include "validate.h"\n#include <string.h>\n' >"$t/src/validate.c"
	printf '#include "db_admin.h"\n#include "db.h"\n' >"$t/tools/admin_x.c"
}

# case NAME EXPECT(pass|fail) FILE LINE [TEXT THE OUTPUT MUST HOLD]
case_() {
	local name=$1 expect=$2 file=$3 line=$4 want=${5:-} t out rc
	t=$scratch/$name
	clean_tree "$t"
	[[ -n $file ]] && echo "$line" >>"$t/$file"
	out=$("$check" "$t" 2>&1)
	rc=$?
	if [[ $expect == pass && $rc -eq 0 ]] ||
		[[ $expect == fail && $rc -ne 0 && $out == *"$want"* ]]; then
		echo "ok   $name"
	else
		echo "FAIL $name (expected $expect, exit $rc):"
		echo "$out" | sed 's/^/     /'
		failures=$((failures + 1))
	fi
}

case_ clean_tree_passes pass "" ""
case_ fuzzer_may_include_the_router pass tests/fuzz/fuzz_request.c '#include "../../src/route.h"'
case_ db_file_including_an_http_header_fails fail src/db_user.c '#include "response.h"' \
	"src/db_user.c:2 includes src/response.h"
case_ handler_including_the_router_fails fail src/storage_api.c '#include "route.h"' \
	"src/storage_api.c:3 includes src/route.h"
case_ server_including_a_tools_header_fails fail src/validate.c '#include "db_admin.h"' \
	"src/validate.c:3 includes tools/db_admin.h"
case_ pure_rule_including_mysql_fails fail src/validate.c '#  include <mysql.h>' \
	"src/validate.c:3 includes <mysql.h>"

# A root given as a relative path (make check passes ../..) is checked too.
t=$scratch/relative_root
clean_tree "$t"
echo '#include "response.h"' >>"$t/src/db_user.c"
if out=$(cd "$scratch" && "$check" relative_root 2>&1) ||
	[[ $out != *"src/db_user.c:2 includes src/response.h"* ]]; then
	echo "FAIL relative_root_is_checked: $out"
	failures=$((failures + 1))
else
	echo "ok   relative_root_is_checked"
fi

# Without its rule table the check must not pass silently.
t=$scratch/no_rules
clean_tree "$t"
sed -i '/^## Layering/,/^## Caches/d' "$t/docs/HACKING.md"
if "$check" "$t" >/dev/null 2>&1; then
	echo "FAIL missing_rule_table_fails (the check passed)"
	failures=$((failures + 1))
else
	echo "ok   missing_rule_table_fails"
fi

if ((failures > 0)); then
	echo "layering self-test: $failures case(s) failed"
	exit 1
fi
echo "layering self-test: every case as expected"
exit 0
