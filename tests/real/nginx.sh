# Issue 13, real programs: Debian's nginx under LD_PRELOAD of cprof, serving
# static files from a minimal configuration in $T and loaded by wrk. The
# responses to a fixed set of requests (status and body), nginx's own
# messages and its exit code after SIGQUIT (a graceful stop) must be as
# without cprof, with master_process on (the master forks a worker) and
# off (one process). Under wrk, no request may fail, and a CPU profile
# taken meanwhile must show nginx's own code among its top 10 functions.
#
# Which process: cprof serves from the process LD_PRELOAD started in. With
# master_process on, the workers that do the work are forks of the master,
# which keep no server and no CPU timer (internals: fork), so the profile is
# taken with master_process off, where the one process does the work.
# Debian strips nginx's static functions: their samples show as [nginx];
# the exported ngx_* names carry the rest, so the flat top 10 is checked for
# either, and the cumulative top 10 for ngx_* names.
#
# nginx reports no heap statistics, so there is no heap check here.
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib.sh"
need nginx wrk curl
NGINX=$(command -v nginx)
PORT=$(free_port)
URL=http://127.0.0.1:$PORT

mkdir -p "$T/html/dir" "$T/tmp" "$T/logs"
# Run as root, nginx's worker drops to nobody, which must read the files.
chmod a+rx "$T"
echo '<h1>cprof</h1>' >"$T/html/index.html"
awk 'BEGIN { for (i = 0; i < 2000; i++) printf "line %06d of a static file\n", i * 7919 % 100000 }' \
  >"$T/html/page.txt"
echo inner >"$T/html/dir/index.html"

# conf MASTER: a configuration with master_process MASTER (on|off), in
# the foreground, logging to files in $T, with its temporary files there.
conf() {
  cat >"$T/nginx.conf" <<EOF
daemon off;
master_process $1;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/logs/error.log notice;
events { worker_connections 256; }
http {
  access_log $T/logs/access.log;
  client_body_temp_path $T/tmp;
  proxy_temp_path $T/tmp;
  fastcgi_temp_path $T/tmp;
  uwsgi_temp_path $T/tmp;
  scgi_temp_path $T/tmp;
  default_type text/plain;
  server {
    listen 127.0.0.1:$PORT;
    root $T/html;
    location /gone { return 410 "gone\n"; }
  }
}
EOF
}

# server NAME [ENV=VAL...]: starts nginx (stderr in $T/NAME.err) and waits
# until it answers.
server() {
  local name=$1
  shift
  env "$@" "$NGINX" -p "$T" -c "$T/nginx.conf" -e stderr >"$T/$name.log" 2>"$T/$name.err" &
  PID=$!
  for _ in $(seq 1 200); do
    curl -s -o /dev/null "$URL/" && return 0
    kill -0 "$PID" 2>/dev/null || { cat "$T/$name.err" >&2; return 1; }
    sleep 0.05
  done
  return 1
}

# requests: status and body of each request, one after the other (headers
# for HEAD, but the Date).
requests() {
  local args
  while read -r args; do
    echo "== $args"
    # shellcheck disable=SC2086  # the words of a line are curl's arguments
    curl -s -w '\nstatus %{http_code}\n' $args
  done <<EOF | grep -v "^Date:"
$URL/
$URL/index.html
$URL/page.txt
-r 100-199 $URL/page.txt
-I $URL/index.html
$URL/dir/
$URL/dir
$URL/missing
$URL/gone
-X DELETE $URL/index.html
-d x=1 $URL/index.html
EOF
}

# stop_server NAME: SIGQUIT (graceful stop), its exit code in $T/NAME.rc,
# and what it printed on stderr but cprof's own lines in $T/NAME.msgs.
stop_server() {
  local rc=0
  kill -QUIT "$PID"
  wait "$PID" || rc=$?
  echo $rc >"$T/$1.rc"
  grep -v '^cprof:' "$T/$1.err" >"$T/$1.msgs" || true
}

for master in on off; do
  conf $master
  server plain-$master
  requests >"$T/plain-$master.out" 2>&1
  stop_server plain-$master
  check "master_process $master: runs without cprof" rc_is plain-$master 0
  server pre-$master LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0
  requests >"$T/pre-$master.out" 2>&1
  if [ $master = off ]; then
    # Load: wrk for 4 s; the profile covers 2 s in the middle of it.
    ADDR=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/pre-off.err")
    wrk -t2 -c16 -d4s "$URL/index.html" >"$T/wrk.out" 2>&1 &
    WRK=$!
    sleep 0.5
    curl -s -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=2"
    wait $WRK
  fi
  stop_server pre-$master
  check "master_process $master: same responses as without cprof" same plain-$master pre-$master out
  same plain-$master pre-$master out || diff "$T/plain-$master.out" "$T/pre-$master.out" >&2 || true
  check "master_process $master: same messages as without cprof" same plain-$master pre-$master msgs
  check "master_process $master: same exit code as without cprof" same plain-$master pre-$master rc
done

sed -n 's/^Requests\/sec: *//p' "$T/wrk.out" | sed 's/^/wrk requests\/s under cprof: /'
check "wrk: requests served" has "$T/wrk.out" '^ +[1-9][0-9]* requests in '
check "wrk: no socket errors and no non-2xx responses" \
  test -z "$(grep -E 'Socket errors|Non-2xx' "$T/wrk.out")"
flat=$(pprof -top -nodecount=10 "$T/cpu.pb.gz" | awk '/ flat%/ { t = 1; next } t { print $6 }' |
  grep -E '^(ngx_|\[nginx\]$)' || true)
echo "nginx's code in the flat top 10:" $flat
check "CPU profile: nginx's own code in the flat top 10" test -n "$flat"
cum=$(pprof -top -cum -nodecount=10 "$T/cpu.pb.gz" | awk '/ flat%/ { t = 1; next } t { print $6 }' |
  grep -E '^ngx_' || true)
echo "ngx_ functions in the cumulative top 10:" $cum
check "CPU profile: ngx_ functions in the cumulative top 10" test -n "$cum"
finish
