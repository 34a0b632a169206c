# Sourced by upload_test.sh and otlp_test.sh: starts and stops one receiver stand-in
# ($receiver, a Python script) in the background. Uses the caller's $tmp and fail(); sets $port.
receiver_pid=
start_receiver() {  # $1 = out folder, rest = receiver options
  local out=$1
  shift
  rm -f "$tmp/port"
  /usr/bin/python3 "$receiver" "$out" "$tmp/port" "$@" 2> "$out.receiver.log" &
  receiver_pid=$!
  for _ in $(seq 100); do
    [[ -s $tmp/port ]] && break
    sleep 0.1
  done
  [[ -s $tmp/port ]] || { fail "the receiver did not start: $(cat "$out.receiver.log")"; return 1; }
  port=$(cat "$tmp/port")
}
stop_receiver() {
  [[ -n $receiver_pid ]] && kill "$receiver_pid" 2> /dev/null && wait "$receiver_pid" 2> /dev/null
  receiver_pid=
}
trap stop_receiver EXIT
