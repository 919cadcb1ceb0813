# cprof SOURCE, the interactive prompt (as go tool pprof SOURCE), driven
# through a pseudo-terminal by prompt_pty.py: settings that stay
# (sample_index=, focus=), reports equal to the subcommands' (the prompt's
# top N is cprof top -n N's table, without the File/Type lines, as pprof's
# prompt sets compact_labels), unknown commands, history recalled with the
# up arrow and kept across sessions, help. Then the same without a
# terminal (commands piped in: no prompts printed), the profile on standard
# input with commands from the terminal, and the errors.
. "$(dirname "$0")/../integration/lib.sh"
CPROF=$B/cprof
PTY=$CPROF_SOURCE_DIR/tests/cli/prompt_pty.py
export TZ=UTC
command -v python3 >/dev/null || skip "no python3"

start demo -- "$B/examples/demo_server" --seconds 30
sleep 1
curl -sf -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2"
curl -sf -o "$T/heap.pb.gz" "http://$ADDR/debug/pprof/heap"
stop
P=$T/cpu.pb.gz

# table FILE: a report without the profile's header lines (File:, Type:...).
table() { awk 'f || /^(Active filters:|Showing nodes|Total:)/ { f = 1; print }' "$1"; }
# same_as NAME OUT ARGS...: the prompt's output OUT equals `cprof ARGS`'s
# report without its header lines.
same_as() {
  local name=$1 out=$2
  shift 2
  "$CPROF" "$@" >"$T/want.full" 2>/dev/null || true
  table "$T/want.full" >"$T/want"
  if [ ! -s "$T/want" ]; then
    fail "$name: cprof $* printed no report"
  elif cmp -s "$T/want" "$out"; then
    pass "$name: equals cprof $* ($(wc -l <"$out") lines)"
  else
    fail "$name: differs from cprof $*"
    diff -u "$T/want" "$out" | head -20 >&2 || true
  fi
}

# --- On a terminal.
mkdir "$T/s1"
python3 "$PTY" "$T/s1" "$CPROF" "$P" >"$T/s1.log" 2>&1 <<'CMDS' || true
top 3
sample_index=0
sample_index
top 3
focus=msort
top
peek msort_with_tmp
bogus
top 2
\x1b[A
help
help top
options
top5 -cum
flame -o flame-test.html
cum
top 4
tagroot=thread
top 10
top 1
quit
CMDS
S=$T/s1
check "the driver ran the whole session" [ -e "$S/rc" ]
cat "$T/s1.log" >&2
check "the prompt exits 0 at quit" grep -qx 0 "$S/rc"
check "greeting: the profile's header" has "$S/greeting.out" '^Type: cpu$'
check "greeting: pprof's line" has "$S/greeting.out" \
  '^Entering interactive mode \(type "help" for commands, "o" for options\)$'
same_as "top 3" "$S/000.out" top -n 3 "$P"
check "sample_index=0 is silent" [ ! -s "$S/001.out" ]
check "a bare sample_index tells its value" grep -qx 'sample_index = samples' "$S/002.out"
same_as "top 3 after sample_index=0" "$S/003.out" top -n 3 --sample_index=0 "$P"
same_as "top after focus=msort (10 nodes, as pprof's prompt)" "$S/005.out" \
  top -n 10 --sample_index=0 --focus msort "$P"
check "top shows the active filter" has "$S/005.out" '^   focus=msort$'
same_as "peek" "$S/006.out" peek --sample_index=0 --focus msort msort_with_tmp "$P"
check "an unknown command: one line" [ "$(cat "$S/007.out")" = 'unrecognized command: "bogus"' ]
same_as "top 2" "$S/008.out" top -n 2 --sample_index=0 --focus msort "$P"
check "the up arrow runs the previous command again" cmp -s "$S/008.out" "$S/009.out"
check "help lists the commands" has "$S/010.out" '^    top +Outputs top entries in text form$'
check "help lists the options" has "$S/010.out" '^    sample_index +Sample value to report'
check "help top: its usage" has "$S/011.out" '^    top \[n\] \[focus_regex\]\* \[-ignore_regex\]\* \[-cum\] >f$'
check "options: sample_index as set" has "$S/012.out" '^  sample_index += samples +//: \[samples \| cpu\]$'
check "options: focus as set" has "$S/012.out" '^  focus += msort +$'
same_as "top5 -cum" "$S/013.out" top -n 5 --cum --sample_index=0 --focus msort "$P"
check "flame -o writes the page" grep -q '^<!DOCTYPE html>' flame-test.html
check "flame says where" has "$S/014.out" '^Saved flame graph in flame-test.html$'
rm -f flame-test.html
same_as "cum, then top 4" "$S/016.out" top -n 4 --cum --sample_index=0 --focus msort "$P"
same_as "tagroot=thread, then top 10" "$S/018.out" top -n 10 --cum --sample_index=0 --focus msort \
  --tagroot thread "$P"
check "tagroot=thread makes the thread's name a row" grep -Eq ' (cpu-burner|lock-worker-[12])$' "$S/018.out"
# libedit's file writes a space as \040.
check "history in ~/.cprof_history" grep -Eqx 'top( |\\040)2' "$HOME/.cprof_history"

# A second session reads the history back ($CPROF_HISTORY): two up arrows
# are the command before the first session's quit; HOME is not needed.
mkdir "$T/s2"
CPROF_HISTORY=$HOME/.cprof_history HOME=/nonexistent \
  python3 "$PTY" "$T/s2" "$CPROF" "$P" >"$T/s2.log" 2>&1 <<'CMDS' || true
\x1b[A\x1b[A
quit
CMDS
cat "$T/s2.log" >&2
check "history from the last session: its top 1" has "$T/s2/000.out" '^Showing top 1 nodes out of'
check "second session exits 0" grep -qx 0 "$T/s2/rc"

# No usable HOME and no CPROF_HISTORY: the prompt works all the same.
mkdir "$T/s3"
HOME=/proc/nonexistent python3 "$PTY" "$T/s3" "$CPROF" prompt "$T/heap.pb.gz" >"$T/s3.log" 2>&1 <<'CMDS' || true
top 2
web -http 127.0.0.1:0
top 2
quit
CMDS
cat "$T/s3.log" >&2
check "web serves the viewer page" grep -q '^<!DOCTYPE html>' "$T/s3/001.page"
check "web says where" has "$T/s3/001.out" '^Serving web UI on http://127\.0\.0\.1:[0-9]+/$'
check "Ctrl-C ends web, and the prompt goes on" cmp -s "$T/s3/000.out" "$T/s3/002.out"
same_as "cprof prompt, HOME unwritable: top 2" "$T/s3/000.out" top -n 2 "$T/heap.pb.gz"
check "cprof prompt exits 0" grep -qx 0 "$T/s3/rc"

# The profile on standard input: commands come from the terminal.
mkdir "$T/s4"
PTY_STDIN=$P python3 "$PTY" "$T/s4" "$CPROF" - >"$T/s4.log" 2>&1 <<'CMDS' || true
top 3
quit
CMDS
cat "$T/s4.log" >&2
same_as "cprof - (profile on stdin, commands from /dev/tty): top 3" "$T/s4/000.out" top -n 3 "$P"

# --- Without a terminal: commands piped in, no prompts in the output.
printf 'top 3\nsample_index=0\nbogus\ntop 3\n' | "$CPROF" "$P" >"$T/pipe.out" 2>"$T/pipe.err"
check "piped: exit 0 at the end of the input" true
{ "$CPROF" top -n 3 "$P" | table /dev/stdin; "$CPROF" top -n 3 --sample_index=0 "$P" | table /dev/stdin; } >"$T/pipe.want"
check "piped: standard output is the two reports and nothing else" cmp -s "$T/pipe.want" "$T/pipe.out"
check "piped: no prompt printed" bash -c "! grep -q 'cprof)' '$T/pipe.out' '$T/pipe.err'"
check "piped: the greeting on stderr" has "$T/pipe.err" '^Entering interactive mode'
check "piped: the unknown command on stderr" has "$T/pipe.err" '^unrecognized command: "bogus"$'
printf 'top 2\n' | "$CPROF" prompt "$P" >"$T/pipe2.out" 2>/dev/null
same_as "piped into cprof prompt" "$T/pipe2.out" top -n 2 "$P"
echo quit | "$CPROF" "$P" "$P" >/dev/null 2>"$T/two.err"
check "two SOURCEs are merged" has "$T/two.err" '^Entering interactive mode'

# --- Errors.
rc=0
timeout 60 setsid -w "$CPROF" - <"$P" >"$T/nott.out" 2>"$T/nott.err" || rc=$?
check "cprof - with no terminal for commands: exit 2" [ "$rc" = 2 ]
check "... and one line saying why" [ "$(wc -l <"$T/nott.err")" = 1 ]
run missing -- "$CPROF" "$T/no-such-file"
check "a SOURCE that does not exist is an unknown command: exit 2" rc_is missing 2
run help -- "$CPROF" prompt --help
check "cprof prompt --help: exit 0" rc_is help 0
check "cprof prompt --help: usage" has "$T/help.out" '^usage: cprof SOURCE'
printf 'garbage' >"$T/bad.pb"
run bad -- "$CPROF" "$T/bad.pb"
check "a profile that does not decode: exit 1" rc_is bad 1
finish
