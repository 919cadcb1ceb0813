# CPU profiles of an aarch64 program under qemu-aarch64, with and without
# frame pointers, read by the host's go tool pprof: a 60-frame recursion
# from main to a burning leaf (tests/integration/programs/deep_burn.c),
# fetched from the aarch64 library's server with curl. The DWARF walker
# (the default) names every function to main in both builds: without frame
# pointers only the .eh_frame rules lead there (x30 saved at CFA+off, or
# still in lr at the leaf). The frame-pointer walker does in the build with
# them; in the one without, it has the leaf alone, as on x86-64. pprof
# reads the profile's mapping and the aarch64 binary's build ID.
. "$(dirname "$0")/lib.sh"

# cum_of_leaf FILE FUNC LEAF PCT: FUNC's cumulative share in pprof -top is
# at least PCT % of LEAF's flat share: the leaf's samples reach FUNC.
cum_of_leaf() {
  awk -v n="$2" -v l="$3" -v p="$4" '$NF == n { sub("%", "", $5); c = $5 + 0; found++ }
    $NF == l { sub("%", "", $2); f = $2 + 0; found++ }
    END { printf "  %s cum %.1f%%, %s flat %.1f%%\n", n, c, l, f > "/dev/stderr"
          exit !(found == 2 && f > 0 && c >= f * p / 100) }' "$1"
}
# depth_to_main FILE: the first -traces sample whose leaf is burn_leaf goes
# through 61 descend frames to main.
depth_to_main() {
  awk '/^-----/ { if (on) exit; next } / burn_leaf$/ && !on { on = 1 }
    on && $NF == "descend" { d++ } on && $NF == "main" { m = 1 }
    END { printf "  descend frames %d, main %s\n", d, m ? "reached" : "not reached" > "/dev/stderr"
          exit !(d == 61 && m) }' "$1"
}

for build in fp nofp; do
  prog=$P/deep_burn_$build
  want_id=$(build_id "$prog")
  for unwind in dwarf fp; do
    t="$build/$unwind"
    start target --ready CPROF_UNWIND=$unwind -- "${A64[@]}" "$prog" 30
    check "$t: fetch /debug/pprof/profile" curl -sf -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2"
    pprof -top "$T/cpu.pb.gz" >"$T/top" || fail "$t: go tool pprof -top"
    pprof -traces "$T/cpu.pb.gz" >"$T/traces" || fail "$t: go tool pprof -traces"
    sed -n '/flat%/,$p' "$T/top" | head -6
    check "$t: pprof reads the aarch64 binary's build ID" has "$T/top" "^Build ID: $want_id\$"
    check "$t: burn_leaf has most samples" cum_of_leaf "$T/top" burn_leaf burn_leaf 100
    if [ "$unwind" = dwarf ] || [ "$build" = fp ]; then
      check "$t: main reaches 95% of burn_leaf's samples" cum_of_leaf "$T/top" main burn_leaf 95
      check "$t: descend reaches them too" cum_of_leaf "$T/top" descend burn_leaf 95
      check "$t: a stack runs from burn_leaf through 61 descend frames to main" depth_to_main "$T/traces"
    else
      # Frame pointers only, in code built without them: x29 is a general
      # register there, which the walker's checks catch; x30 gives descend.
      check "$t: the walk stops short of main, as on x86-64" bash -c "! grep -q ' main\$' '$T/top'"
    fi
    stop
  done
done
finish
