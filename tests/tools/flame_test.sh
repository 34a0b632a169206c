#!/bin/bash
# The flame page in headless Chromium: for each view (URL fragment #by=..., #search=..., or a
# script appended to a copy of the page that changes the selector, clicks a frame, clicks
# reset) the DOM Chromium dumps has exactly the frames, status and search result derived by hand
# for tests/tools/tools_workload.h (flame_check.py). Skips, saying so, without Chromium.
#
# Usage: flame_test.sh <ctxprof> <write_tools_recording> <flame_check.py>
set -euo pipefail

ctxprof=$1
generator=$2
checker=$3
tmp=${TEST_TMPDIR:-$(mktemp -d)}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

chromium=$(command -v chromium || true)
if [[ -z $chromium ]]; then
  echo "SKIP: chromium is not installed; the flame page was not rendered (tools/install-deps.sh" \
    "installs it)"
  exit 0
fi

"$generator" "$tmp/tools.jfr" jdk
timeout 60 "$ctxprof" flame "$tmp/tools.jfr" --by endpoint -o "$tmp/flame.html" --quiet
grep -q '<script type="application/json" id="profile-data">' "$tmp/flame.html" ||
  fail "no embedded data"

dump() {  # $1 = page URL, $2 = output
  local profile
  profile=$(mktemp -d "$tmp/chromium.XXXXXX")
  HOME=$tmp timeout 60 "$chromium" --headless --no-sandbox --disable-gpu \
    --disable-background-networking --disable-component-update --disable-sync --no-first-run \
    --user-data-dir="$profile" --dump-dom "$1" > "$2" 2> "$tmp/chromium.log" ||
    { cat "$tmp/chromium.log" >&2; fail "chromium failed on $1"; }
}

variant() {  # $1 = name, $2 = script run after the page's own
  local html
  html=$(< "$tmp/flame.html")
  printf '%s' "${html%</body>*}<script>$2</script></body>${html##*</body>}" > "$tmp/$1.html"
}

check() {  # $1 = case, $2 = URL
  dump "$2" "$tmp/$1.dom.html"
  /usr/bin/python3 "$checker" "$tmp/$1.dom.html" "$1"
}

page="file://$tmp/flame.html"
check all "$page"
check checkout "$page#by=%2Fcheckout"
check search "$page#by=%2Fsearch"
check no-context "$page#by=(no%20context)"
check unset "$page#by=(unset)"
check checkout-search "$page#by=%2Fcheckout&search=method4"

click='function frame(name) { return Array.from(document.querySelectorAll(".frame")).find(
  function(f) { return f.textContent === name; }); }'
variant select-search "var s = document.getElementById('group');
  s.value = Array.from(s.options).find(function(o) { return o.text.indexOf('/search') === 0; }).value;
  s.dispatchEvent(new Event('change'));"
check select-search "file://$tmp/select-search.html"
variant zoom "$click frame('com.example.svc.Handler2.method2').click();"
check zoom "file://$tmp/zoom.html"
variant zoom-reset "$click frame('com.example.svc.Handler2.method2').click();
  document.getElementById('reset').click();"
check zoom-reset "file://$tmp/zoom-reset.html"

# The differential page: samples 1-6 before, all 12 after.
"$generator" "$tmp/before.jfr" before
timeout 60 "$ctxprof" flame --diff "$tmp/before.jfr" "$tmp/tools.jfr" --by endpoint \
  -o "$tmp/flame.html" --quiet
check diff "file://$tmp/flame.html"
check diff-checkout "file://$tmp/flame.html#by=%2Fcheckout"
variant diff-before-widths "var w = document.getElementById('widths'); w.value = 'before';
  w.dispatchEvent(new Event('change'));"
check diff-before-widths "file://$tmp/diff-before-widths.html"
echo "PASS"
