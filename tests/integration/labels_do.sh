# cprof_do, judged by go tool pprof: the goroutine profile shows a thread's
# nested cprof_do labels and the labels a thread inherited from the
# cprof_do its creator was in (-tags, -raw), debug=1 and debug=2 print
# them as Go does, and the CPU profile carries the labels of the cprof_do
# a busy loop runs in.
. "$(dirname "$0")/lib.sh"

start labels --ready -- "$B/tests/integration/labels_do"
url=http://$ADDR/debug/pprof/goroutine

pprof -tags "$url" >"$T/tags" || { fail "goroutine: go tool pprof -tags"; cat "$T/pprof.err" >&2; }
for tag in 'request: Total 2' 'checkout' 'refund' 'step: Total 1' 'pay' 'tenant: Total 1' 'acme' 'work: Total 1'; do
  check "goroutine -tags shows $tag" has "$T/tags" "$tag"
done
check "goroutine -tags: the outer request=search is hidden by the nested call" bash -c "! grep -q search '$T/tags'"

pprof -raw "$url" >"$T/raw" || fail "goroutine: go tool pprof -raw"
check "-raw: the inherited thread has both nested levels" has "$T/raw" \
  '^ +request:\[checkout\] step:\[pay\] thread:\[inherited\]$'
check "-raw: the nested thread has the inner call's labels" has "$T/raw" \
  '^ +request:\[refund\] tenant:\[acme\] thread:\[nested\]$'
check "-raw: main, back from its cprof_do, has only its name" has "$T/raw" '^ +thread:\[labels_do\]$'

http "$url?debug=1" >/dev/null
check "debug=1: # labels: as Go prints them" has "$T/body" \
  '^# labels: \{"request":"checkout", "step":"pay", "thread":"inherited"\}$'
http "$url?debug=2" >/dev/null
grep -A1 '^thread [0-9]* "inherited"' "$T/body" >"$T/inherited" || true
check "debug=2: labels: under the thread's line" has "$T/inherited" '^labels: \{"request":"checkout", "step":"pay"\}$'
grep -A1 '^thread [0-9]* "labels_do"' "$T/body" >"$T/main" || true
check "debug=2: no labels: line for a thread without labels" bash -c "! grep -q '^labels:' '$T/main'"

cpu="http://$ADDR/debug/pprof/profile?seconds=2"
pprof -tags "$cpu" >"$T/cpu_tags" || { fail "CPU: go tool pprof -tags"; cat "$T/pprof.err" >&2; }
check "CPU -tags shows work=hot" has "$T/cpu_tags" '^ +work: Total'
check "CPU -tags: hot" has "$T/cpu_tags" ': hot$'
pprof -top -tagfocus=work=hot "http://$ADDR/debug/pprof/profile?seconds=1" >"$T/cpu_top" ||
  fail "CPU: go tool pprof -top -tagfocus"
check "CPU -tagfocus=work=hot finds the busy loop" has "$T/cpu_top" ' burn$'
stop
finish
