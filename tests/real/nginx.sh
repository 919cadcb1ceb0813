# Issue 13, real programs: Debian's nginx under LD_PRELOAD of cprof, serving
# static files from a minimal configuration in $T and loaded by wrk. The
# responses to a fixed set of requests (status and body), nginx's own
# messages and its exit code after SIGQUIT (a graceful stop) must be as
# without cprof, with master_process on (the master forks a worker) and
# off (one process). Under wrk, no request may fail, and a CPU profile
# taken meanwhile must show nginx's own code among its top 10 functions.
#
# Which process (issue 31): with master_process on (nginx's default), the
# master owns cprof's address and its workers, forks that do all the work,
# answer through it: the CPU profile is taken there, merged over every
# process with a pid label on each sample, under wrk, with 2 workers; as
# root, the `user` directive makes them drop to nobody, which they do after
# joining the tree. ?pid= gives one worker alone, and a worker killed and
# started again by the master appears with its new pid.
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

# conf MASTER WORKERS [USER]: a configuration with master_process MASTER
# (on|off) and WORKERS worker processes (USER: a `user` directive), in
# the foreground, logging to files in $T, with its temporary files there.
conf() {
  cat >"$T/nginx.conf" <<EOF
daemon off;
master_process $1;
worker_processes $2;
$3
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

# workers [GONE]: the master's children as the tree lists them, into W
# (waits until there are 2, GONE not among them, at most 20 s).
workers() {
  W=()
  for _ in $(seq 1 200); do
    [ "$(http "http://$ADDR/debug/pprof/processes")" = 200 ] &&
      mapfile -t W < <(grep -o "\"pid\":[0-9]*,\"ppid\":$PID," "$T/body" | cut -d: -f2 | cut -d, -f1)
    [ "${#W[@]}" = 2 ] && [ "${W[0]}" != "${1:-}" ] && [ "${W[1]}" != "${1:-}" ] && return 0
    sleep 0.1
  done
  return 0
}

# The tree's checks, on nginx under cprof with master_process on.
tree_checks() {
  ADDR=$(sed -n 's|^cprof: serving http://\([^/]*\)/.*|\1|p' "$T/pre-on.err")
  workers
  echo "master $PID, workers ${W[*]}"
  check "tree: the master lists its 2 workers" test "${#W[@]}" = 2
  if [ "$(id -u)" = 0 ]; then
    check "tree: the workers run as nobody (the user directive)" \
      bash -c "[ \"\$(ps -o user= -p ${W[0]},${W[1]} | sort -u)\" = nobody ]"
  fi
  # Load: wrk for 6 s; the merged profile covers 3 s of it, then one
  # worker's alone 1 s.
  wrk -t2 -c16 -d6s "$URL/index.html" >"$T/wrk.out" 2>&1 &
  local wrk=$!
  sleep 0.5
  curl -s -o "$T/cpu.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=3"
  curl -s -o "$T/one.pb.gz" "http://$ADDR/debug/pprof/profile?seconds=1&pid=${W[0]}"
  wait $wrk
  pprof -tags "$T/cpu.pb.gz" >"$T/tags" || true
  sed -n '/ pid:/,/^$/p' "$T/tags"
  for w in "${W[@]}"; do
    check "merged CPU profile: worker $w's samples, labelled pid=$w" has "$T/tags" ": $w$"
    pprof -top -cum -tagfocus="pid=$w" "$T/cpu.pb.gz" >"$T/top.$w" || true
    check "merged CPU profile: ngx_http_ functions in worker $w's samples" has "$T/top.$w" ' ngx_http_'
  done
  pprof -top -cum "$T/one.pb.gz" >"$T/one.top" || true
  pprof -tags "$T/one.pb.gz" >"$T/one.tags" || true
  check "?pid=${W[0]}: the worker's CPU profile has ngx_http_ functions" has "$T/one.top" ' ngx_http_'
  check "?pid=${W[0]}: one process, no pid label" bash -c "! grep -q ' pid:' '$T/one.tags'"
  # A worker killed is started again by the master: it appears with its new pid.
  local gone=${W[0]}
  kill -9 "$gone"
  workers "$gone"
  echo "after worker $gone was killed: ${W[*]}"
  check "a worker killed and started again appears with its new pid" \
    bash -c "[ ${#W[@]} = 2 ] && [ '${W[0]}' != $gone ] && [ '${W[1]:-}' != $gone ]"
  if [ "${#W[@]}" != 2 ]; then # what the master has, and what its children run
    cat "$T/body" >&2
    ps -o pid,ppid,user,stat,cmd --ppid "$PID" >&2 || true
    for c in $(ps -o pid= --ppid "$PID"); do
      echo "$c: $(cat /proc/"$c"/task/*/comm 2>/dev/null | tr '\n' ' ')" >&2
    done
    W[1]=${W[0]:-0}
  fi
  local new=${W[0]:-0}
  [ "$new" = "${W[1]}" ] || { [ "${W[0]}" -gt "${W[1]}" ] || new=${W[1]}; }
  check "?pid=$new: the new worker answers" test "$(http "http://$ADDR/debug/pprof/heap?pid=$new")" = 200
}

USER_LINE=
[ "$(id -u)" = 0 ] && USER_LINE="user nobody nogroup;"
for master in on off; do
  conf $master 2 "$USER_LINE"
  server plain-$master
  requests >"$T/plain-$master.out" 2>&1
  stop_server plain-$master
  check "master_process $master: runs without cprof" rc_is plain-$master 0
  server pre-$master LD_PRELOAD="$LIB" CPROF_ADDR=127.0.0.1:0
  requests >"$T/pre-$master.out" 2>&1
  if [ $master = on ]; then
    tree_checks
  fi
  stop_server pre-$master
  check "master_process $master: same responses as without cprof" same plain-$master pre-$master out
  same plain-$master pre-$master out || diff "$T/plain-$master.out" "$T/pre-$master.out" >&2 || true
  check "master_process $master: same messages as without cprof" same plain-$master pre-$master msgs
  check "master_process $master: same exit code as without cprof" same plain-$master pre-$master rc
done

# nginx as it runs by default, a daemon, under `cprof run`: its first
# process forks the master and exits (cprof run with it, with its status);
# the master takes over cprof's address, and its workers answer there.
conf on 2 "$USER_LINE"
sed -i 's/^daemon off;$/daemon on;/' "$T/nginx.conf"
CPORT=$(free_port)
run daemon -- "$B/cprof" run --addr "127.0.0.1:$CPORT" -- "$NGINX" -p "$T" -c "$T/nginx.conf"
check "as a daemon under cprof run: starts, status 0" rc_is daemon 0
ADDR=127.0.0.1:$CPORT
for _ in $(seq 1 100); do [ -s "$T/nginx.pid" ] && break; sleep 0.05; done
PID=$(cat "$T/nginx.pid" 2>/dev/null || echo 0)
workers
echo "daemon: master $PID, workers ${W[*]}"
check "as a daemon: the master serves cprof's address, with its 2 workers" test "${#W[@]}" = 2
wrk -t2 -c16 -d4s "$URL/index.html" >"$T/wrk.daemon" 2>&1 &
WRK=$!
sleep 0.5
pprof -top -cum "http://$ADDR/debug/pprof/profile?seconds=2" >"$T/daemon.top" || true
wait $WRK
check "as a daemon: go tool pprof -top on the address shows ngx_http_ functions" \
  has "$T/daemon.top" ' ngx_http_'
kill -QUIT "$PID" 2>/dev/null || true
for _ in $(seq 1 100); do [ -e "$T/nginx.pid" ] || break; sleep 0.05; done

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
