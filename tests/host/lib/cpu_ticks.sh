# cpu_ticks PID: user + system time, in clock ticks (getconf CLK_TCK), of
# every thread of the process but the main one: in the tests that source
# this (../nofile_limit.sh, ../tcmalloc_full.sh) main sleeps, and the other
# threads are cprof's, so a spinning server shows here. Source it after
# lib.sh.
cpu_ticks() {
  local t sum=0 f
  for t in /proc/"$1"/task/*; do
    [ "${t##*/}" = "$1" ] && continue
    # Fields after the ")" that ends the name: utime is the 12th, stime the 13th.
    f=$(sed 's/.*) //' "$t/stat" 2>/dev/null) || continue
    set -- "$1" $f
    sum=$((sum + ${13} + ${14}))
  done
  echo "$sum"
}
