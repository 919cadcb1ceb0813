# cprof collect --check: the seed config (Parca's, from the issue) is read
# and summed up on one line with exit 0; broken configs each give exit 1
# and one line naming the file, the line and the column at fault; usage
# errors exit 2.
. "$(dirname "$0")/../integration/lib.sh"
C=$B/cprof

cat >"$T/parca.yaml" <<'YAML'
object_storage:
  bucket:
    type: "FILESYSTEM"
    config:
      directory: "./tmp"

scrape_configs:
  - job_name: "backend"
    scrape_interval: "3s"
    static_configs:
      - targets: [ '127.0.0.1:6060' ]
  - job_name: "cluster-agent"
    scrape_interval: "3s"
    static_configs:
      - targets: [ '127.0.0.1:6061' ]
YAML

run seed -- "$C" collect --check "$T/parca.yaml"
check "seed: exit 0" rc_is seed 0
check "seed: the summary" has "$T/seed.out" \
  "^$T/parca.yaml: 2 jobs, 2 targets, 5 profiles each; storage \./tmp\$"
check "seed: nothing on stderr" [ ! -s "$T/seed.err" ]
run seed2 -- "$C" collect --config "$T/parca.yaml" --check
check "--config FILE --check: the same" same seed seed2 out

# broken NAME LINE:COLUMN PHRASE: $T/NAME.yaml (written before) fails with
# exit 1 and exactly one line, FILE:LINE:COLUMN: ...PHRASE..., on stderr.
broken() {
  local name=$1 where=$2 phrase=$3
  run "$name" -- "$C" collect --check "$T/$name.yaml"
  check "$name: exit 1" rc_is "$name" 1
  check "$name: one line on stderr" [ "$(wc -l <"$T/$name.err")" = 1 ]
  check "$name: at $where" has "$T/$name.err" "^$T/$name.yaml:$where: .*$phrase"
  check "$name: nothing on stdout" [ ! -s "$T/$name.out" ]
}
# mutate NAME SED-SCRIPT: the seed config edited by sed into $T/NAME.yaml.
mutate() { sed "$2" "$T/parca.yaml" >"$T/$1.yaml"; }

mutate typo 's/scrape_interval: "3s"/scrape_intervall: "3s"/'
broken typo 9:5 'unknown key scrape_intervall'
mutate duration '13s/"3s"/"3 seconds"/'
broken duration 13:22 'is not a duration'
mutate timeout '9a\    scrape_timeout: "4s"'
broken timeout 10:21 'must be more than 0 and fit in scrape_interval'
mutate dup 's/cluster-agent/backend/'
broken dup 12:15 'job_name backend is used twice'
mutate url "s|'127.0.0.1:6061'|'http://127.0.0.1:6061/debug'|"
broken url 15:20 'is not host:port'
mutate s3 's/"FILESYSTEM"/"S3"/'
broken s3 3:11 'only FILESYSTEM'
mutate nodir 's/directory:/dir:/'
broken nodir 5:7 'unknown key dir'
mutate syntax "s/\[ '127.0.0.1:6060' \]/[ '127.0.0.1:6060'/"
broken syntax 12:3 'did not find expected'
: >"$T/empty.yaml"
broken empty 1:1 'empty'

run missing -- "$C" collect --check "$T/nope.yaml"
check "a missing file: exit 1" rc_is missing 1
check "a missing file: named, with the reason" has "$T/missing.err" "^$T/nope.yaml: No such file or directory\$"

run nofile -- "$C" collect --check
check "no FILE: exit 2" rc_is nofile 2
run badopt -- "$C" collect --frobnicate "$T/parca.yaml"
check "an unknown option: exit 2" rc_is badopt 2
run help -- "$C" collect --help
check "--help: exit 0 and the usage" bash -c "[ \"\$(cat '$T/help.rc')\" = 0 ] && grep -q '^usage: cprof collect' '$T/help.out'"
run listed -- "$C" --help
check "cprof --help lists collect" has "$T/listed.out" '^  collect '
finish
