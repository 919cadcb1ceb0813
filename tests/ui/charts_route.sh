# /debug/charts/ as a running process serves it: the library's page bytes,
# its Content-Security-Policy, the redirect to the directory, the index's
# link, and the same prefix and credentials as every other route.
. "$CPROF_SOURCE_DIR/tests/integration/lib.sh"

P=$B/tests/integration
"$B/tests/ui/charts_page" "$T/want.html"

start target --ready -- "$P/stacks_linked"
U=http://$ADDR/debug
check "/debug/charts/ is 200" [ "$(http "$U/charts/")" = 200 ]
check "it is HTML" has "$T/headers" '^Content-Type: text/html; charset=utf-8'
check "it is the page charts_page writes" cmp -s "$T/body" "$T/want.html"
check "it forbids all but its own inline code and fetches to its server" has "$T/headers" \
  "^Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'"
check "it has nosniff" has "$T/headers" '^X-Content-Type-Options: nosniff'
check "/debug/charts redirects to /debug/charts/" [ "$(http "$U/charts")" = 301 ]
check "redirect target" has "$T/headers" '^Location: /debug/charts/'
check "the index is 200" [ "$(http "$U/pprof/")" = 200 ]
check "the index links the charts" has "$T/body" "href='../charts/'"
check "nothing else under /debug/charts/x" [ "$(http "$U/charts/x")" = 404 ]
stop

start target --ready CPROF_PREFIX=/ops CPROF_TOKEN=t0ken -- "$P/stacks_linked"
check "under a prefix, without the token: 401" [ "$(http "http://$ADDR/ops/debug/charts/")" = 401 ]
check "under a prefix, with the token: 200" \
  [ "$(http "http://$ADDR/ops/debug/charts/" -H 'Authorization: Bearer t0ken')" = 200 ]
check "the redirect keeps the prefix" \
  [ "$(http "http://$ADDR/ops/debug/charts" -H 'Authorization: Bearer t0ken')" = 301 ]
check "redirect target under the prefix" has "$T/headers" '^Location: /ops/debug/charts/'
check "not outside the prefix" \
  [ "$(http "http://$ADDR/debug/charts/" -H 'Authorization: Bearer t0ken')" = 404 ]
stop
finish
