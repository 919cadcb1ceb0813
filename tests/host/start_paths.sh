# Nothing at start-up waits on a path a user names (issue 28, defect 7).
# CPROF_TLS_CERT or CPROF_TLS_KEY naming a FIFO held the program before main
# for ever: the server's keeper blocked in open(2) and the constructor
# waited for the keeper. Each of them naming a FIFO, a directory or
# /dev/zero: the program runs to its end, prints and exits as without
# cprof, and one stderr line names the variable and says what it names
# (the server stays off, as for any bad setting). CPROF_OUTPUT with a FIFO
# at the name it writes through: the program's exit is not held either.
. "$(dirname "$0")/../integration/lib.sh"
P=$B/tests/host/host_hello

command -v openssl >/dev/null || skip "no openssl to make a certificate (scripts/install-deps.sh test)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=127.0.0.1 -keyout "$T/key.pem" -out "$T/cert.pem" 2>"$T/openssl.err" ||
  { cat "$T/openssl.err"; exit 1; }
mkfifo "$T/fifo"
mkdir "$T/dir"

# Each run is bounded: a hang is exit code 124 (timeout), not a stuck test.
export RUN_TIMEOUT=10
run plain -- "$P"

# tls VAR KEY WHAT PATH: the other variable names a good PEM file.
tls() {
  local var=$1 name=${1}_$2 what=$3 path=$4 cert key
  if [ "$var" = CPROF_TLS_CERT ]; then cert=$path key=$T/key.pem; else cert=$T/cert.pem key=$path; fi
  run "$name" LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_TLS_CERT="$cert" CPROF_TLS_KEY="$key" -- "$P"
  echo "  $name: exit $(cat "$T/$name.rc"); stderr:"
  sed 's/^/    /' "$T/$name.err"
  check "$var is $what: the program ends with its own output" same plain "$name" out
  check "$var is $what: and its own exit status (not 124, a timeout)" same plain "$name" rc
  check "$var is $what: one stderr line, naming $var" \
    eval '[ "$(wc -l <"$T/$name.err")" = 1 ] && has "$T/$name.err" "^cprof: $var=$path: not a regular file.*the profiling server stays off$"'
}

for var in CPROF_TLS_CERT CPROF_TLS_KEY; do
  tls $var fifo "a FIFO" "$T/fifo"
  tls $var dir "a directory" "$T/dir"
  tls $var zero /dev/zero /dev/zero
done

# The good pair still serves HTTPS: the checks above refuse only what is
# not a regular file.
run good LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0 CPROF_TLS_CERT="$T/cert.pem" \
  CPROF_TLS_KEY="$T/key.pem" -- "$P"
check "a good pair: the server starts (serving https)" has "$T/good.err" '^cprof: serving https://'

# CPROF_OUTPUT: a FIFO where the profile is written (through a temporary
# name) must not hold the program's exit.
mkdir "$T/out"
mkfifo "$T/out/cpu.pb.gz.tmp"
run output LD_PRELOAD="$LIB" CPROF_ADDR=0 CPROF_OUTPUT="$T/out" -- "$P"
echo "  output: exit $(cat "$T/output.rc"); stderr:"
sed 's/^/    /' "$T/output.err"
check "CPROF_OUTPUT with a FIFO at its temporary name: the program ends as without cprof" \
  eval 'same plain output out && same plain output rc'
check "CPROF_OUTPUT: the other profiles are written" [ -s "$T/out/heap.pb.gz" ]
finish
