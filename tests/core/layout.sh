# The house's layout (issue 30): scripts/layout.py draws the folder graph of
# src/ (includes, and names one file of another folder alone defines) and
# exits 1 on a circle, an arrow up the floors or a consumer reaching a
# sampler. The tree passes; a made-up tree with one arrow of each kind
# fails, and the listing names each.
. "$(dirname "$0")/../integration/lib.sh"
LAYOUT=$CPROF_SOURCE_DIR/scripts/layout.py

python3 "$LAYOUT" --root "$CPROF_SOURCE_DIR" >"$T/tree.out" 2>&1 && rc=0 || rc=$?
sed -n '/circles$/,$p' "$T/tree.out" | sed 's/^/  /'
check "the tree: no circle, no arrow up, no forbidden arrow (exit 0)" [ "$rc" = 0 ]
unplaced=$(grep -c 'has no floor' "$T/tree.out" || true)
check "the tree: every folder of src/ is on a floor" [ "$unplaced" = 0 ]

# core includes sample (up), sample calls a function of core and core one
# of sample's (a circle), and http names a sampler's function (forbidden).
R=$T/bad
mkdir -p "$R/src/core" "$R/src/sample" "$R/src/http"
printf '#include "sample/heap.h"\nint cprof__core_thing(void) { return 1; }\n' >"$R/src/core/a.c"
printf 'int cprof__heap_thing(void);\n' >"$R/src/sample/heap.h"
printf 'int cprof__heap_thing(void) { return cprof__core_thing(); }\n' >"$R/src/sample/heap.c"
printf 'int f(void) { return cprof__heap_thing(); }\n' >"$R/src/http/h.c"
python3 "$LAYOUT" --root "$R" >"$T/bad.out" 2>&1 && rc=0 || rc=$?
sed 's/^/  /' "$T/bad.out"
check "a bad tree: exit 1" [ "$rc" = 1 ]
check "a bad tree: the circle is named" has "$T/bad.out" '^  core <-> sample$'
check "a bad tree: the arrow up is named" has "$T/bad.out" '^  core -> sample$'
check "a bad tree: the consumer's arrow to a sampler is named" has "$T/bad.out" '^  http -> sample$'
finish
