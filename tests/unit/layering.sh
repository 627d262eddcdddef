#!/bin/bash
# Fail when an #include points up the layering: the rules are the table in
# docs/HACKING.md, "Layering", read from there so the document and the
# check cannot drift apart.
#
# usage: tests/unit/layering.sh [ROOT]   (default $top_srcdir, else the tree
#        this script is in; tests/unit/layering-selftest.sh passes a scratch tree)
set -u
set -f # globs here are patterns for paths, never expanded
sep=$'\x1f' # between the cells of a rule (not blank: cells may be empty)
root=${1:-${top_srcdir:-$(dirname "$0")/../..}}
root=$(cd "$root" && pwd) || exit 1 # absolute: the script changes folder
rules_doc=$root/docs/HACKING.md

# The rows of the Layering table as "FILES sep NEVER sep EXCEPT sep WHY",
# each cell's `globs` joined by spaces.
read_rules() {
	awk -F'|' -v sep="$sep" '
		/^## / { in_section = ($0 ~ /^## Layering[[:space:]]*$/); next }
		!in_section || !/^\| *`/ { next }
		{
			line = ""
			for (i = 2; i <= 4; i++) {
				cell = $i; globs = ""
				while (match(cell, /`[^`]+`/)) {
					globs = globs (globs == "" ? "" : " ") substr(cell, RSTART + 1, RLENGTH - 2)
					cell = substr(cell, RSTART + RLENGTH)
				}
				line = line globs sep
			}
			why = $5; gsub(/^ +| +$/, "", why)
			print line why
		}' "$rules_doc"
}

# Does path match one of the space-separated globs? (* crosses slashes.)
matches() {
	local path=$1 glob
	for glob in $2; do
		# shellcheck disable=SC2053 # the glob is meant as a pattern
		[[ $path == $glob ]] && return 0
	done
	return 1
}

# The tree path a quoted include of name from a file in dir resolves to,
# as the compiler looks: the includer's folder, then src/, then tools/.
resolve() {
	local dir=$1 name=$2 cand
	for cand in "$dir/$name" "src/$name" "tools/$name"; do
		if [[ -f $root/$cand ]]; then
			realpath -m --relative-to="$root" "$root/$cand"
			return
		fi
	done
}

if [[ ! -r $rules_doc ]]; then
	echo "layering: cannot read $rules_doc"
	exit 1
fi
mapfile -t rules < <(read_rules)
if ((${#rules[@]} == 0)); then
	echo "layering: no rules found in $rules_doc, section \"Layering\""
	exit 1
fi

bad=0 resolved=0
cd "$root" || exit 1
while IFS= read -r file; do
	while IFS=: read -r lineno name; do
		if [[ $name == \<* ]]; then
			header=$name # a system or library header, as written: <mysql.h>
		else
			header=$(resolve "$(dirname "$file")" "$name")
			[[ -n $header ]] || continue # not in the tree (generated)
			resolved=$((resolved + 1))
		fi
		for rule in "${rules[@]}"; do
			IFS=$sep read -r files never except why <<<"$rule"
			matches "$file" "$files" || continue
			[[ -n $except ]] && matches "$file" "$except" && continue
			matches "$header" "$never" || continue
			echo "layering: $file:$lineno includes $header: $why"
			bad=$((bad + 1))
		done
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' "$file" |
		sed -E 's/^([0-9]+):[^"<]*"([^"]+)".*/\1:\2/; s/^([0-9]+):[^<]*(<[^>]+>).*/\1:\2/')
done < <(find src tools tests bench -name '*.[ch]' 2>/dev/null | sort)

if ((resolved == 0)); then
	echo "layering: no #include \"...\" found a header in $root: nothing was checked"
	exit 1
fi
if ((bad > 0)); then
	echo "$bad include(s) against the layering (docs/HACKING.md, Layering)"
	exit 1
fi
echo "layering: ${#rules[@]} rules hold for $resolved includes in src/, tools/, tests/ and bench/"
exit 0
