# Issue 13, limits: at most CPROF_MAX_PROFILES expensive requests (profiles
# being built) run at once; the ones beyond get 503 with Retry-After and a
# one-line reason, and the index answers meanwhile. A second CPU profile
# while one runs shares its recording (issue 32): both answer 200; CPU and
# wall profiles, readers of a recording bounded on its own, take no slot.
. "$(dirname "$0")/../integration/lib.sh"
H=$B/tests/host

start srv --ready LD_PRELOAD="$LIB" CPROF_MAX_PROFILES=2 -- "$H/host_sleeper" 300
IDX=http://$ADDR/debug/pprof/

# Three 3-second delta profiles at once, with two slots: exactly one is
# refused, at once, and told when to come back.
CURLS=()
for i in 1 2 3; do
  curl -s -m 15 -o "$T/body$i" -D "$T/headers$i" -w '%{http_code}\n' \
    "http://$ADDR/debug/pprof/goroutine?seconds=3" >"$T/code$i" &
  CURLS+=($!)
done
sleep 1
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$IDX" || true)
check "while two profiles build, the index answers (HTTP $code)" [ "$code" = 200 ]
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://$ADDR/debug/pprof/cmdline" || true)
check "while two profiles build, cmdline answers (HTTP $code)" [ "$code" = 200 ]
wait "${CURLS[@]}"
echo "  three delta profiles: $(cat "$T"/code? | tr '\n' ' ')"
check "two of three got 200" [ "$(cat "$T"/code? | grep -c '^200$')" = 2 ]
check "one of three got 503" [ "$(cat "$T"/code? | grep -c '^503$')" = 1 ]
for i in 1 2 3; do
  if [ "$(cat "$T/code$i")" = 503 ]; then
    echo "  503: $(grep -i '^retry-after' "$T/headers$i" | tr -d '\r') | $(cat "$T/body$i")"
    check "the 503 has Retry-After of 1 to 4 s (the others end within 3)" \
      has "$T/headers$i" '^Retry-After: [1-4]'
    check "the 503 names CPROF_MAX_PROFILES" has "$T/body$i" 'CPROF_MAX_PROFILES'
  fi
done
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://$ADDR/debug/pprof/heap" || true)
check "once they are done, a profile answers (HTTP $code)" [ "$code" = 200 ]

# Two CPU profiles at once, slots free: both answer, for their own seconds.
curl -s -m 15 -o "$T/cpu1body" -w '%{http_code}\n' "http://$ADDR/debug/pprof/profile?seconds=2" >"$T/cpu1" &
CPU1=$!
sleep 0.5
code=$(curl -s -m 5 -o "$T/cpu2body" -w '%{http_code}' "http://$ADDR/debug/pprof/profile?seconds=2" || true)
wait $CPU1
check "a second CPU profile meanwhile gets 200 (HTTP $code)" [ "$code" = 200 ]
check "the first CPU profile gets 200" [ "$(cat "$T/cpu1")" = 200 ]
check "... both read by go tool pprof" eval 'pprof -raw "$T/cpu1body" >/dev/null && pprof -raw "$T/cpu2body" >/dev/null'

# CPU and wall profiles read the shared recording, which bounds its own
# readers (16): they take no slot, so with two slots three CPU profiles, a
# wall profile and the viewer's data of a CPU profile running leave both
# for a delta profile and a heap profile
# (issue 32: a collector's scrapes were refused while profiles ran).
for i in 1 2 3; do
  curl -s -m 15 -o /dev/null -w '%{http_code}\n' "http://$ADDR/debug/pprof/profile?seconds=3" >"$T/rec$i" &
done
curl -s -m 15 -o /dev/null -w '%{http_code}\n' "http://$ADDR/debug/pprof/wall?seconds=3" >"$T/rec4" &
curl -s -m 15 -o /dev/null -w '%{http_code}\n' "http://$ADDR/debug/pprof/ui/data?name=profile&seconds=3" >"$T/rec5" &
sleep 0.5
curl -s -m 15 -o /dev/null -w '%{http_code}\n' "http://$ADDR/debug/pprof/goroutine?seconds=1" >"$T/side1" &
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://$ADDR/debug/pprof/heap" || true)
for job in $(jobs -p); do
  [ "$job" = "$PID" ] || wait "$job" || true
done
echo "  recordings: $(cat "$T"/rec? | tr '\n' ' ')beside them: $(cat "$T"/side? | tr '\n' ' ')$code"
check "three CPU profiles, a wall profile and the viewer's CPU data, two slots: all 200" \
  [ "$(cat "$T"/rec? | grep -c '^200$')" = 5 ]
check "... and beside them a delta profile and a heap profile: 200" \
  [ "$(cat "$T/side1")" = 200 -a "$code" = 200 ]

# A bad setting: one stderr line and the default.
start bad LD_PRELOAD="$LIB" CPROF_MAX_PROFILES=lots CPROF_READ_TIMEOUT=0 -- "$H/host_sleeper" 300
check "CPROF_MAX_PROFILES=lots: one line naming it" has "$T/bad.err" \
  '^cprof: CPROF_MAX_PROFILES="lots": expected a whole number of requests from 1 to 64; using 4$'
check "CPROF_READ_TIMEOUT=0: one line naming it" has "$T/bad.err" \
  '^cprof: CPROF_READ_TIMEOUT="0": expected a whole number of seconds from 1 to 3600; using 10$'
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://$ADDR/debug/pprof/" || true)
check "with bad limits the server serves on defaults (HTTP $code)" [ "$code" = 200 ]
stop
finish
