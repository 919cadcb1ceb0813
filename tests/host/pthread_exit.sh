# A main that ends with pthread_exit: the process ends when the program's
# last thread does, exit status 0, atexit handlers run and stdio flushed,
# as without cprof (cprof's own threads once kept it alive for ever).
. "$(dirname "$0")/../integration/lib.sh"
P=$B/tests/host/host_main_exits_thread
RUN_TIMEOUT=20

run plain -- "$P"
check "without cprof: exit code 0" rc_is plain 0
check "without cprof: the atexit handler ran" has "$T/plain.out" '^atexit handler ran$'
sort "$T/plain.out" >"$T/plain.sorted"
for mode in "server CPROF_ADDR=127.0.0.1:0" "output CPROF_ADDR=0 CPROF_OUTPUT=$T/out" \
  "both CPROF_ADDR=127.0.0.1:0 CPROF_OUTPUT=$T/out2 CPROF_BLOCK_RATE=1 CPROF_MUTEX_FRACTION=1"; do
  name=${mode%% *}
  run "$name" LD_PRELOAD="$LIB" ${mode#* } -- "$P"
  check "$name: ends, exit code 0 (was: never ends)" rc_is "$name" 0
  sort "$T/$name.out" >"$T/$name.sorted"
  check "$name: same output, atexit handler included" same plain "$name" sorted
done
check "output: CPROF_OUTPUT's CPU profile written at the end" [ -s "$T/out/cpu.pb.gz" ]
check "output: and the heap profile" [ -s "$T/out/heap.pb.gz" ]
check "output: go tool pprof reads the CPU profile" bash -c "go tool pprof -raw '$T/out/cpu.pb.gz' >/dev/null 2>&1"
check "output: the heap profile has the worker's allocations" \
  bash -c "go tool pprof -sample_index=alloc_space -top '$T/out/heap.pb.gz' 2>/dev/null | grep -q worker"
# Named by cprof, not by pprof from the files here: main has gone, so
# /proc/PID/maps reads empty and /proc/PID/auxv cannot be read (libdw's
# module report found nothing, and every frame was [module]).
check "output: cprof named the worker itself" bash -c \
  "go tool pprof -symbolize=none -sample_index=alloc_space -top '$T/out/heap.pb.gz' 2>/dev/null | grep -q ' worker$'"
finish
