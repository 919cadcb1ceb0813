# A custom profile (cprof_profile_new), read by the real client: go tool
# pprof must find the profile's own sample type, and the keys each function
# added and did not remove (5 from accept_tcp, 3 from accept_unix); the
# index lists it with its count; debug=1 is Go's count text; and a delta
# (written by the registry's controller, with known work between its two
# snapshots) carries the changes with their signs.
. "$(dirname "$0")/lib.sh"

P=$B/tests/integration
# Each unwinder takes the add's stack from the caller up.
for unwind in fp dwarf; do
  start conns --ready CPROF_UNWIND=$unwind -- "$P/custom_conns"
  pprof -top "http://$ADDR/debug/pprof/connections" >"$T/top.$unwind" || fail "$unwind: -top"
  check "$unwind: 5 from accept_tcp" has "$T/top.$unwind" '^ +5 +62\.50% .* accept_tcp$'
  check "$unwind: 3 from accept_unix, under main" bash -c \
    "grep -Eq '^ +3 +37\.50% .* accept_unix$' '$T/top.$unwind' && grep -Eq ' 8 +100% +main$' '$T/top.$unwind'"
  stop
done

start conns --ready -- "$P/custom_conns"
url=http://$ADDR/debug/pprof/connections

pprof -top "$url" >"$T/top" || { fail "go tool pprof -top"; cat "$T/pprof.err" >&2; }
check "-top: the sample type is the profile's name" has "$T/top" '^Type: connections$'
check "-top: 8 connections in all" has "$T/top" 'of 8 total'
check "-top: 5 from accept_tcp" has "$T/top" '^ +5 +62\.50% .* accept_tcp$'
check "-top: 3 from accept_unix" has "$T/top" '^ +3 +37\.50% .* accept_unix$'
check "-top: cprof's own frames are not in it" bash -c "! grep -q 'cprof_profile_add\|unwind' '$T/top'"

pprof -raw "$url" >"$T/raw" || fail "go tool pprof -raw"
check "-raw: period type connections count" has "$T/raw" '^PeriodType: connections count$'
check "-raw: sample type connections/count" has "$T/raw" '^connections/count$'
# The first location of the sample of 5 is in accept_tcp, not in cprof.
first=$(sed -n 's/^ *5: \([0-9]*\) .*/\1/p' "$T/raw" | head -1)
check "-raw: the stack of the 5 starts at accept_tcp" has "$T/raw" \
  "^ +${first:-none}: 0x[0-9a-f]+ M=[0-9]+ accept_tcp "
check "-raw: accept_tcp named with its file" has "$T/raw" 'accept_tcp .*custom_conns\.c:[0-9]+'

check "index lists connections" test "$(http "http://$ADDR/debug/pprof/")" = 200
check "index: the profile's count and its description" has "$T/body" \
  "<td>8</td><td><a href='connections\\?debug=1'>connections</a>"
check "index: the description" has "$T/body" 'Open connections, by where they were accepted'

check "debug=1 answers" test "$(http "$url?debug=1")" = 200
check "debug=1: Go's count text, with the total" has "$T/body" '^connections profile: total 8$'
check "debug=1: the 5 of accept_tcp" bash -c "grep -A1 '^5 @ ' '$T/body' | grep -q 'accept_tcp+'"
# The text has addresses only: pprof symbolizes them through /symbol.
pprof -top "$url?debug=1" >"$T/top1" || { fail "go tool pprof reads the debug=1 text"; cat "$T/pprof.err" >&2; }
check "debug=1 through pprof: 5 from accept_tcp" has "$T/top1" '^ +5 .* accept_tcp$'
stop

# The delta: accept_unix opened 4 more and one TCP connection closed.
run delta -- "$P/custom_conns_delta" "$T/delta.pb.gz"
check "delta: written" rc_is delta 0
pprof -top "$T/delta.pb.gz" >"$T/dtop" || { fail "go tool pprof reads the delta"; cat "$T/pprof.err" >&2; }
check "delta: +4 from accept_unix" has "$T/dtop" '^ +4 .* accept_unix$'
check "delta: -1 from accept_tcp" has "$T/dtop" '^ +-1 .* accept_tcp$'
check "delta: the sample type is the profile's name" has "$T/dtop" '^Type: connections$'
pprof -raw "$T/delta.pb.gz" >"$T/draw" || fail "go tool pprof -raw of the delta"
check "delta: a duration" has "$T/draw" '^Duration: '
finish
