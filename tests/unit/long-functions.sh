#!/bin/bash
# Fail when a function in src/ or tools/ runs over 80 lines
# (docs/HACKING.md, Code conventions), unless tests/unit/long-functions.known
# lists it: the ones still waiting to be split. A listed one that is no
# longer long is named so that the list shrinks; it does not fail.
#
# A function is counted from the line that names it to its closing brace,
# as the house style writes them: signature from column 0, '{' and '}'
# alone at column 0.
#
# usage: tests/unit/long-functions.sh [ROOT]
set -u
root=${1:-${top_srcdir:-$(dirname "$0")/../..}}
root=$(cd "$root" && pwd) || exit 1 # absolute: the script changes folder
limit=80
known_file=$root/tests/unit/long-functions.known
cd "$root" || exit 1

# "LINES FILE NAME" for every function of the given files.
lengths() {
	awk '
		/^[A-Za-z_].*\(/ && !/;[[:space:]]*$/ { sig = $0; sig_line = FNR }
		/^\{/ {
			open = 1; name = sig; sub(/\(.*/, "", name)
			n = split(name, word, /[ *]+/); name = word[n]
		}
		/^\}/ && open { print FNR - sig_line + 1, FILENAME, name; open = 0 }
	' "$@"
}

declare -A known=()
if [[ -r $known_file ]]; then
	while read -r file name _; do
		[[ -z $file || $file == \#* ]] && continue
		known["$file $name"]=1
	done <"$known_file"
fi

bad=0 listed=0
declare -A still_long=()
while read -r lines file name; do
	((lines > limit)) || continue
	if [[ -n ${known["$file $name"]:-} ]]; then
		still_long["$file $name"]=1
		listed=$((listed + 1))
		continue
	fi
	echo "long function: $file: $name is $lines lines (at most $limit; split it)"
	bad=$((bad + 1))
done < <(lengths src/*.c tools/*.c)

for entry in "${!known[@]}"; do
	[[ -n ${still_long[$entry]:-} ]] ||
		echo "note: $entry is no longer over $limit lines: remove it from tests/unit/long-functions.known"
done

if ((bad > 0)); then
	echo "$bad function(s) over $limit lines (docs/HACKING.md, Code conventions)"
	exit 1
fi
echo "no function over $limit lines in src/ and tools/ but the $listed listed in tests/unit/long-functions.known"
exit 0
