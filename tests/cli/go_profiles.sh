# The profiles Go writes (tests/cli/make_go_profiles.sh) are there, and
# `go tool pprof -top` reads each of them under every sample type it has,
# showing the functions goprog made them from: the reference the cprof
# command's tests compare with.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"
. "$CPROF_SOURCE_DIR/tests/cli/make_go_profiles.sh"

go_profiles

# sample_types FILE: the profile's sample types, one a line, from the line
# that heads pprof's -raw listing ("Samples:" then "alloc_objects/count ...").
sample_types() {
  go tool pprof -raw "$1" 2>/dev/null | sed -n '/^Samples:/{n;p;q}' | tr -s ' ' '\n' |
    sed -n 's|/.*||p'
}

# expect PROFILE TYPES REGEX...: the profile has exactly the sample types
# TYPES (space-separated), and for each of them -top names every REGEX.
expect() {
  local name=$1 want=$2 f=$GOPROF/$1.pb.gz types t re
  shift 2
  types=$(sample_types "$f" | tr '\n' ' ' | sed 's/ $//')
  check "$name: sample types are '$want' (got '$types')" [ "$types" = "$want" ]
  for t in $types; do
    pprof -top -sample_index="$t" "$f" >"$T/$name.$t.top" || true
    check "$name/$t: -top has a Type: $t header" has "$T/$name.$t.top" "^Type: $t$"
    for re in "$@"; do
      check "$name/$t: -top shows $re" has "$T/$name.$t.top" " $re\$"
    done
  done
}

# A function's name ends its row of -top.
expect cpu "samples cpu" 'main\.cpuHeavy' 'main\.cpuLight' 'main\.cpuGeneric\[\.\.\.\]' 'main\.spin'
expect heap "alloc_objects alloc_space inuse_objects inuse_space" 'main\.allocKeep' \
  'main\.\(\*store\)\.grow'
expect allocs "alloc_objects alloc_space inuse_objects inuse_space" 'main\.allocKeep'
for t in alloc_objects alloc_space; do
  check "allocs/$t: -top shows main.allocTemp" has "$T/allocs.$t.top" ' main\.allocTemp$'
done
expect goroutine "goroutine" 'main\.parked'
expect block "contentions delay" 'main\.blockOnChannel'
expect mutex "contentions delay" 'main\.holdMutex'
# Go's threadcreate profile often has no stacks at all (threads made before
# profiling could see them), but it counts them: pprof shows "of N total".
expect threadcreate "threadcreate"
check "threadcreate: counts at least one thread" \
  has "$T/threadcreate.threadcreate.top" ' of [1-9][0-9]* total$'

# allocTemp's blocks were all dropped before the profile: none in use.
check "heap/inuse_space: allocTemp is not in use" \
  bash -c "! grep -q ' main\.allocTemp\$' '$T/heap.inuse_space.top'"

finish
