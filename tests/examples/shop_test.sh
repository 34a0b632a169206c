#!/bin/bash
# The example shop (examples/shop) as the demo runs it, without timing: the service starts as a
# plain JVM that binds libctxprof's context store but profiles nothing, the load generator (a
# second JVM) sends a fixed number of requests of the fixed mix, every one is answered with the
# service's measurements; the generator's counting window (--count-while) opens and closes with
# its file; SIGTERM stops the service with its account of what it served.
# The demo's jfrsync pass (tools/demo.sh): `ctxprof attach --jfrsync default --select if-context`
# around the fixed requests makes one file of ctxprof's spans and the JDK's events, whose joins
# are checked against what the requests did: every shop.Order (the shop's jdk.jfr.Event) in a
# /checkout span with the items the requests asked for, the JDK's jdk.SocketRead bytes of
# /shipping equal to the carrier's answers, the socket time inside /shipping's spans, no socket
# read in another endpoint's; JDK 25's `jfr print` shows the Context lines on those events.
# Usage errors of both programs exit 2 with a message.
#
# Usage: shop_test.sh <ctxprof.jar> <shop.jar> <libctxprof.so> <ctxprof tool>
set -euo pipefail

classpath="$(realpath "$1"):$(realpath "$2")"
library=$(realpath "$3")
ctxprof=$(realpath "$4")
tmp=${TEST_TMPDIR:-$(mktemp -d)}
source "$(dirname "$0")/../jdks.sh"
java="$(ctxprof_jdk17)/bin/java"

fail() {
  echo "FAIL: $*" >&2
  [ -f "$tmp/shop.log" ] && { echo "service log:" >&2; cat "$tmp/shop.log" >&2; }
  exit 1
}

service=""
generator=""
cleanup() {
  local pid
  for pid in $service $generator; do kill -KILL "$pid" 2>/dev/null; done
  true
}
trap cleanup EXIT

"$java" -Dctxprof.library="$library" -cp "$classpath" io.ctxprof.example.ShopService \
  --workers 3 --port-file "$tmp/port" > "$tmp/shop.log" 2>&1 &
service=$!
for _ in $(seq 300); do  # up to 60 s for a loaded machine; normally well under 1 s
  [ -s "$tmp/port" ] && break
  kill -0 "$service" 2>/dev/null || fail "the service exited before it wrote its port"
  sleep 0.2
done
[ -s "$tmp/port" ] || fail "the service wrote no port file within 60 s"
grep -q "^shop: serving on 127.0.0.1:$(cat "$tmp/port") with 3 workers (pid $service)" \
  "$tmp/shop.log" || fail "no 'serving on' line with the port and pid"
grep -q "context disabled" "$tmp/shop.log" && fail "the tracer did not bind libctxprof"

# The demo's jfrsync pass around the fixed requests below: nothing else runs in the service, so
# every request is inside the session.
recording=$tmp/shop-jfrsync.jfr
"$ctxprof" attach "$service" start --lib "$library" --event cpu --interval 10ms \
  --jfrsync default --select if-context -o "$recording" > "$tmp/attach.log" 2>&1 ||
  fail "attach start --jfrsync: $(cat "$tmp/attach.log")"

# 40 requests = two cycles of the mix: 12 /checkout, 10 /catalog, 10 /inventory, 8 /shipping.
timeout 120 "$java" -cp "$classpath" io.ctxprof.example.LoadGenerator \
  --port "$(cat "$tmp/port")" --clients 2 --requests 40 --summary "$tmp/load.tsv" \
  > "$tmp/load.log" 2>&1 || { cat "$tmp/load.log" >&2; fail "the load generator failed"; }
"$ctxprof" attach "$service" stop --lib "$library" > "$tmp/attach.log" 2>&1 ||
  fail "attach stop: $(cat "$tmp/attach.log")"
grep -q "^load: 2 clients sent 40 requests in .* s, 0 errors; counted 40" "$tmp/load.log" ||
  fail "load generator's first line: $(head -n 1 "$tmp/load.log")"

# The summary: the counts of the mix, no errors, and what the service measured. Every request
# runs some code (CPU > 0); each /catalog request allocates at least its 200 thumbnails of
# 8 KiB (10 requests: >= 16,384,000 bytes); only /inventory takes the monitor, so only it can
# have blocked time; a request's span lasts at least its CPU time, so the span sum does too, and
# p50 <= p99 <= the sum.
python3 - "$tmp/load.tsv" <<'EOF' || fail "load summary: $(cat "$tmp/load.tsv")"
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
assert rows[0] == ["endpoint", "requests", "errors", "cpu_nanos", "alloc_bytes",
                   "blocked_nanos", "span_nanos", "span_p50_nanos", "span_p99_nanos"], rows[0]
table = {row[0]: [int(v) for v in row[1:]] for row in rows[1:]}
assert list(table) == ["/checkout", "/catalog", "/inventory", "/shipping"], list(table)
for endpoint, requests in {"/checkout": 12, "/catalog": 10, "/inventory": 10,
                           "/shipping": 8}.items():
    count, errors, cpu, alloc, blocked, spans, p50, p99 = table[endpoint]
    assert (count, errors) == (requests, 0), (endpoint, count, errors)
    assert cpu > 0, (endpoint, cpu)
    assert spans >= cpu and 0 < p50 <= p99 <= spans, (endpoint, cpu, spans, p50, p99)
    assert blocked == 0 or endpoint == "/inventory", (endpoint, blocked)
assert table["/catalog"][3] >= 10 * 200 * 8192, table["/catalog"]
EOF

# The jfrsync recording, joined by the ctxprof tool. What the 40 requests did, from
# LoadGenerator.requestFor (request i: endpoint CYCLE[i % 20], n = 5 + i % 10) and the carrier's
# answer ("quote for parcel N: C cents\n", C = 450 + 25 * digits of N, Carrier.answer): the
# items of the orders and the bytes the /shipping requests read from the carrier's socket.
for spec in "shop.Order items" "jdk.SocketRead bytesRead" "jdk.SocketRead duration"; do
  read -r type field <<< "$spec"
  "$ctxprof" convert --to collapsed --events "$type" --value "$field" "$recording" \
    -o "$tmp/$type.$field.collapsed" --quiet || fail "convert --events $type --value $field"
done
"$ctxprof" report "$recording" --by endpoint --events shop.Order --value items --quiet \
  > "$tmp/orders.txt" || fail "report --events shop.Order"
python3 - "$tmp" "$tmp/load.tsv" "$tmp/orders.txt" <<'EOF' || fail "jfrsync joins (above)"
import sys
tmp, load, report = sys.argv[1:]
CYCLE = [0, 1, 2, 3, 0, 1, 2, 0, 3, 1, 2, 0, 1, 3, 2, 0, 1, 2, 3, 0]  # LoadGenerator.CYCLE
ENDPOINTS = ["/checkout", "/catalog", "/inventory", "/shipping"]
items = bytes_read = 0
for i in range(40):
    n = 5 + i % 10
    if ENDPOINTS[CYCLE[i % 20]] == "/checkout":
        items += n
    if ENDPOINTS[CYCLE[i % 20]] == "/shipping":
        bytes_read += len(f"quote for parcel {n}: {450 + 25 * len(str(n))} cents\n")

def per_endpoint(name):
    """Collapsed lines ([endpoint=E];[tenant=T];frames COUNT) added up per endpoint; None for
    the events in no context."""
    totals = {}
    for line in open(f"{tmp}/{name}.collapsed"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        first = stack.split(";")[0]
        endpoint = first[len("[endpoint="):-1] if first.startswith("[endpoint=") else None
        totals[endpoint] = totals.get(endpoint, 0) + int(count)
    return totals

# Every order is in its request's context: 12 events, all in /checkout spans, the items asked.
header = open(report).readline().strip()
assert header == f"events: shop.Order 12; items: {items}", (header, items)
orders = per_endpoint("shop.Order.items")
assert orders == {"/checkout": items}, orders
# The JDK's socket reads: /shipping's read exactly the carrier's answers; no other endpoint
# reads a socket in its span (the carrier's own threads read outside any: no context).
reads = per_endpoint("jdk.SocketRead.bytesRead")
assert reads.get("/shipping") == bytes_read, (reads, bytes_read)
assert set(reads) <= {"/shipping", None}, reads
# Socket time: each /shipping request waits for an answer the carrier sends 20 ms after it got
# the question (Carrier.ANSWER_MILLIS; a lower bound, never shorter), all inside the spans the
# service measured.
wait = per_endpoint("jdk.SocketRead.duration")
rows = {row.split("\t")[0]: row.rstrip("\n").split("\t") for row in open(load)}
spans = int(rows["/shipping"][6])
assert 8 * 15_000_000 <= wait["/shipping"] <= spans, (wait, spans)
assert set(wait) <= {"/shipping", None}, wait
print(f"jfrsync: 12 orders ({items} items) in /checkout, {bytes_read} bytes and "
      f"{wait['/shipping'] / 1e6:.1f} ms of socket reads in /shipping (spans {spans / 1e6:.1f} ms)")
EOF

# The JDK's own judge: JDK 25's printer shows the request's Context lines on each of the JDK's
# and the application's events (JDK 17's has no Context lines; its reader must read the file).
"$(ctxprof_jdk17)/bin/jfr" summary "$recording" > "$tmp/summary17.txt" ||
  fail "JDK 17's jfr summary cannot read the jfrsync recording"
grep -qE "^ shop.Order +12 " "$tmp/summary17.txt" || fail "JDK 17's jfr summary: no 12 shop.Order"
if jdk25=$(ctxprof_jdk25); then
  "$jdk25/bin/jfr" print --events shop.Order,jdk.SocketRead "$recording" > "$tmp/print25.txt" ||
    fail "JDK 25's jfr print of the jfrsync recording"
  python3 - "$tmp/print25.txt" <<'EOF' || fail "JDK 25's Context lines (above)"
import re, sys
events = open(sys.argv[1]).read().split("\n\n")
def endpoints(kind):
    return [re.findall(r'Context: Context.endpoint = "([^"]*)"', e) for e in events
            if e.lstrip().startswith(kind + " {")]
orders = endpoints("shop.Order")
assert orders == [["/checkout"]] * 12, orders
reads = [e for e in endpoints("jdk.SocketRead") if e]
assert len(reads) >= 8 and all(e == ["/shipping"] for e in reads), reads
print(f"JDK 25 jfr print: 12 shop.Order with Context /checkout, {len(reads)} jdk.SocketRead "
      "with Context /shipping")
EOF
else
  echo "skipping JDK 25's jfr print: not installed (looked for /usr/lib/jvm/temurin-25*)"
fi

# --count-while: requests count only while the file exists, and the generator stops once the
# file has come and gone. Nothing here depends on how many requests fit in the window.
"$java" -cp "$classpath" io.ctxprof.example.LoadGenerator --port "$(cat "$tmp/port")" \
  --clients 2 --count-while "$tmp/window" --summary "$tmp/window.tsv" > "$tmp/window.log" 2>&1 &
generator=$!
touch "$tmp/window"
for _ in $(seq 300); do
  grep -qs "exists: counting requests" "$tmp/window.log" && break
  sleep 0.2
done
grep -qs "^load: $tmp/window exists: counting requests" "$tmp/window.log" ||
  fail "the generator did not see the window open: $(cat "$tmp/window.log")"
rm "$tmp/window"
status=0
timeout 60 tail --pid="$generator" -f /dev/null || fail "the generator did not stop after the window"
wait "$generator" || status=$?
generator=""
[ "$status" -eq 0 ] || fail "the generator exited with $status: $(cat "$tmp/window.log")"
line=$(grep "^load: 2 clients sent" "$tmp/window.log") || fail "no 'sent' line: $(cat "$tmp/window.log")"
[[ $line =~ sent\ ([0-9]+)\ requests\ in\ .*\ s,\ 0\ errors\;\ counted\ ([0-9]+)\ \(([0-9]+)\ outside ]] ||
  fail "unexpected line: $line"
sent=${BASH_REMATCH[1]}
[ $((BASH_REMATCH[2] + BASH_REMATCH[3])) -eq "$sent" ] || fail "counted + outside != sent: $line"
[ "$(wc -l < "$tmp/window.tsv")" -eq 5 ] || fail "window summary: $(cat "$tmp/window.tsv")"

kill -TERM "$service"
status=0
wait "$service" || status=$?
service=""
[ "$status" -eq 143 ] || fail "the service exited with $status on SIGTERM (want 143)"
grep -qxE "shop: stopped after serving $((40 + sent)) requests: /catalog [0-9]+ /checkout [0-9]+ /inventory [0-9]+ /shipping [0-9]+" \
  "$tmp/shop.log" || fail "no (or a wrong) 'stopped after serving' line (want $((40 + sent)) requests)"

expect_usage() {  # $1 = text of the message; the rest: the command
  local want=$1 status=0
  shift
  "$@" > "$tmp/usage.log" 2>&1 || status=$?
  [ "$status" -eq 2 ] || fail "exit $status (want 2) for: $*"
  grep -qF -e "$want" "$tmp/usage.log" || fail "message '$(cat "$tmp/usage.log")' lacks '$want'"
}
expect_usage "--workers wants a number from 1 to 256, got '0'" \
  "$java" -cp "$classpath" io.ctxprof.example.ShopService --workers 0
expect_usage "unknown argument '--nope'" \
  "$java" -cp "$classpath" io.ctxprof.example.ShopService --nope 1
expect_usage "give --port and one of --requests, --seconds, --count-while" \
  "$java" -cp "$classpath" io.ctxprof.example.LoadGenerator --requests 3
expect_usage "give --port and one of --requests, --seconds, --count-while" \
  "$java" -cp "$classpath" io.ctxprof.example.LoadGenerator --port 1 --seconds 3 --requests 3
echo PASS
