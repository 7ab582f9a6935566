#!/bin/sh
# Fails when docs/ALGORITHMS.md's algorithm table and the registry disagree. Every
# (collective, algorithm, channels) that `trnccl-topo --algorithms` lists needs a table row that
# names the collective in its first column (as TRNCCL_ALGO names it; a row may list several,
# comma-separated), the algorithm in its second and yes/no in its third; and every row whose
# first column names registered collectives must name a registered algorithm.
# usage: check_algorithms_doc.sh TRNCCL_TOPO ALGORITHMS_MD
set -eu
topo=$1
doc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$topo" --algorithms | awk '!/^#/ && NF >= 3 { print $1, $2, $3 }' | sort -u >"$tmp/registry"
test -s "$tmp/registry" || { echo "trnccl-topo --algorithms listed nothing" >&2; exit 1; }
awk '{ print $1 }' "$tmp/registry" | sort -u >"$tmp/collectives"

# Table rows: | collectives | algorithm | channels | ...; backticks and spaces dropped.
awk -F'|' 'NF > 4 {
  algo = $3; gsub(/[` ]/, "", algo)
  channels = $4; gsub(/[` ]/, "", channels)
  n = split($2, colls, ",")
  for (i = 1; i <= n; i++) { c = colls[i]; gsub(/[` ]/, "", c); print c, algo, channels }
}' "$doc" | sort -u >"$tmp/rows"
# Only the rows of registered collectives (not the header, nor other tables).
awk 'NR == FNR { known[$1] = 1; next } ($1 in known)' "$tmp/collectives" "$tmp/rows" \
  >"$tmp/documented"

status=0
missing=$(comm -23 "$tmp/registry" "$tmp/documented")
if [ -n "$missing" ]; then
  echo "registered but not in $doc (collective algorithm channels):" >&2
  echo "$missing" | sed 's/^/  /' >&2
  status=1
fi
unknown=$(comm -13 "$tmp/registry" "$tmp/documented")
if [ -n "$unknown" ]; then
  echo "in $doc but not registered (collective algorithm channels):" >&2
  echo "$unknown" | sed 's/^/  /' >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "$(wc -l <"$tmp/registry") registered algorithms, all documented"
exit "$status"
