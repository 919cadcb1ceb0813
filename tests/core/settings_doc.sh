# One source for the settings (issue 30): doc/settings.md's table is checked
# against the code. Every CPROF_* variable the code reads (a string literal
# "CPROF_NAME" in src/: what cprof__config_load and the LD_PRELOAD
# constructor pass to getenv) has a row; every row names a variable the code
# reads; and each row's default is the code's: setting the variable to it
# leaves cprof__config_load's settings as they are without it
# (tests/core/settings_default.c).
#
# SETTINGS_DOC=FILE checks another copy of the page, to see the test fail.
. "$(dirname "$0")/../integration/lib.sh"

DOC=${SETTINGS_DOC:-$CPROF_SOURCE_DIR/doc/settings.md}
HELPER=$B/tests/core/settings_default
[ -x "$HELPER" ] || fail "no $HELPER: build the target settings_default"

# Read by the LD_PRELOAD constructor before any setting is loaded, not by
# cprof__config_load: its default (0, off) is tests/host/children.sh's.
OUTSIDE_LOADER="CPROF_CHILDREN"
# Read only when the push is on.
push_context() { case $1 in CPROF_PUSH_*) echo "CPROF_PUSH_URL=http://127.0.0.1:9" ;; esac; }

# The table's rows: "NAME<TAB>DEFAULT", DEFAULT the first `code` of the
# default column, or empty for "none".
awk -F'|' '
  /^## / { table = ($0 == "## The table") }
  table && /^\| *`CPROF_/ {
    name = $2; gsub(/[ `]/, "", name)
    d = $3; sub(/^ +/, "", d)
    if (d ~ /^none/) v = ""
    else if (match(d, /`[^`]*`/)) v = substr(d, RSTART + 1, RLENGTH - 2)
    else v = "\001"
    printf "%s\t%s\n", name, v
  }' "$DOC" >"$T/rows"
cut -f1 "$T/rows" | sort >"$T/documented"
grep -rhoE '"CPROF_[A-Z0-9_]+"' "$CPROF_SOURCE_DIR/src" | tr -d '"' | sort -u >"$T/code"

check "doc/settings.md has a table of settings" [ -s "$T/documented" ]
check "each setting has one row" [ -z "$(uniq -d "$T/documented")" ]
for name in $(comm -23 "$T/code" "$T/documented"); do
  fail "$name: the code reads it, doc/settings.md's table does not have it"
done
for name in $(comm -13 "$T/code" "$T/documented"); do
  fail "$name: in doc/settings.md's table, unknown to the code (no \"$name\" in src/)"
done
check "the settings the code reads are the ones documented" cmp -s "$T/code" "$T/documented"

while IFS=$'\t' read -r name value; do
  if [ "$value" = $'\001' ]; then
    fail "$name: its default column starts with neither \`VALUE\` nor none"
    continue
  fi
  case " $OUTSIDE_LOADER " in *" $name "*) continue ;; esac
  # shellcheck disable=SC2046 # the context is one word or none
  if out=$("$HELPER" "$name" "$value" $(push_context "$name") 2>&1); then
    pass "$name: the code's default is the documented ${value:-none}"
  else
    fail "$name: documented default ${value:-none}: $out"
  fi
done <"$T/rows"
finish
