#!/usr/bin/env bash
# Throughput through a real Postfix: bulkwatch vs a do-nothing milter
# (examples/null_milter.rs) on the same socket type, in one run, plus Postfix
# without a milter for reference. Load from Postfix's smtp-source: 1 session
# and 10 sessions, 5000-byte messages, several messages per connection.
# Each milter gets a warm-up batch first, and the queue drains between runs.
# The milters take turns (REPS), and the summary compares each bulkwatch
# turn with the null turn beside it: on a shared machine single runs spread
# widely.
#
# Needs root and postfix (see docs/dev/development.md, "A private Postfix").
#   cargo build --release && cargo build --release --example null_milter
#   benches/postfix_milter.sh                  # inet socket
#   SOCK=unix benches/postfix_milter.sh        # unix socket
#   NULL_ARGS=--no-reply benches/postfix_milter.sh
#                                              # null milter on bulkwatch's
#                                              # protocol options
# Env: PROFILE (release|debug), CARGO_TARGET_DIR, BW / NULL (the two
# milters' binaries), NULL_ARGS (the null milter's options: empty, it
# answers every stage, as a plainly written milter does; --no-reply, it
# negotiates what bulkwatch negotiates), REPS (turns each, default 3),
# N1 / N10 (messages per run), SIZE (bytes), SMTP_PORT / SINK_PORT /
# MILTER_PORT.
set -euo pipefail
cd "$(dirname "$0")/.."

PROFILE=${PROFILE:-release}
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
BW=${BW:-$TARGET/$PROFILE/bulkwatch}
NULL=${NULL:-$TARGET/$PROFILE/examples/null_milter}
N1=${N1:-1000}
N10=${N10:-4000}
SIZE=${SIZE:-5000}
SOCK=${SOCK:-inet}
REPS=${REPS:-3}
NULL_ARGS=${NULL_ARGS:-}
SMTP=${SMTP_PORT:-12525}
SINK=${SINK_PORT:-12526}
MPORT=${MILTER_PORT:-12527}

[ "$(id -u)" = 0 ] || { echo "needs root (private postfix instance)" >&2; exit 2; }
for f in "$BW" "$NULL" /usr/sbin/postfix /usr/sbin/smtp-source /usr/sbin/smtp-sink; do
  [ -x "$f" ] || { echo "missing $f" >&2; exit 2; }
done

DIR=$(mktemp -d /tmp/bwbench.XXXXXX)
chmod 0755 "$DIR"
mkdir -p "$DIR"/{conf,queue,data,state}
chown postfix "$DIR/data"
if [ "$SOCK" = unix ]; then
  MSOCK="unix:$DIR/milter.sock"
  BWSOCK="unix:$DIR/milter.sock"
  NULLSOCK="unix:$DIR/milter.sock"
else
  MSOCK="inet:127.0.0.1:$MPORT"
  BWSOCK="inet:127.0.0.1:$MPORT"
  NULLSOCK="127.0.0.1:$MPORT"
fi

cleanup() {
  postfix -c "$DIR/conf" stop >/dev/null 2>&1 || true
  [ -n "${SINKPID:-}" ] && kill "$SINKPID" 2>/dev/null || true
  [ -n "${MPID:-}" ] && kill "$MPID" 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT

cat > "$DIR/conf/main.cf" <<CF
compatibility_level = 3.6
queue_directory = $DIR/queue
data_directory = $DIR/data
mail_owner = postfix
myhostname = mx.bench.example
mydestination =
relayhost = [127.0.0.1]:$SINK
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject
local_transport = error:local delivery disabled
alias_maps =
alias_database =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
smtp_dns_support_level = disabled
smtpd_peername_lookup = no
maillog_file = $DIR/maillog
maillog_file_prefixes = $DIR
smtpd_milters = $MSOCK
milter_protocol = 6
milter_default_action = tempfail
default_process_limit = 100
CF
cat > "$DIR/conf/master.cf" <<CF
127.0.0.1:$SMTP inet n - n - - smtpd
pickup unix n - n 60 1 pickup
cleanup unix n - n - 0 cleanup
qmgr unix n - n 300 1 qmgr
rewrite unix - - n - - trivial-rewrite
bounce unix - - n - 0 bounce
defer unix - - n - 0 bounce
trace unix - - n - 0 bounce
verify unix - - n - 1 verify
flush unix n - n 1000? 0 flush
proxymap unix - - n - - proxymap
smtp unix - - n - - smtp
relay unix - - n - - smtp
showq unix n - n - - showq
error unix - - n - - error
retry unix - - n - - error
discard unix - - n - - discard
local unix - n n - - local
anvil unix - - n - 1 anvil
scache unix - - n - 1 scache
postlog unix-dgram n - n - 1 postlogd
CF
cat > "$DIR/bulkwatch.toml" <<CF
[milter]
socket = "$BWSOCK"
socket_mode = "0666"
[state]
state_dir = "$DIR/state"
[metrics]
listen = ""
CF

smtp-sink -u postfix "127.0.0.1:$SINK" 1000 >/dev/null 2>&1 &
SINKPID=$!
postfix -c "$DIR/conf" start >/dev/null

wait_milter() {
  for _ in $(seq 1 200); do
    if [ "$SOCK" = unix ]; then [ -S "$DIR/milter.sock" ] && return 0
    else (exec 3<>"/dev/tcp/127.0.0.1/$MPORT") 2>/dev/null && return 0; fi
    sleep 0.05
  done
  echo "milter did not come up" >&2; exit 1
}

drain() {
  for _ in $(seq 1 600); do
    postqueue -c "$DIR/conf" -p 2>/dev/null | grep -q "Mail queue is empty" && return 0
    sleep 0.1
  done
}

# CPU time (user + system, clock ticks) the milter has used so far, its
# worker processes included (bulkwatch reads mail in children: the live
# ones, and the ended ones it has reaped); 0 without one. Steadier than
# msg/s on a shared machine: it is the cost the milter takes out of the
# cores Postfix needs.
milter_ticks() {
  if [ -n "${MPID:-}" ] && [ -r "/proc/$MPID/stat" ]; then
    # Fields 14 to 17 (utime, stime, cutime, cstime), counted after the
    # ")" that ends the name; then each live child's 14 and 15.
    {
      sed 's/.*) //' "/proc/$MPID/stat" | awk '{ print $12 + $13 + $14 + $15 }'
      for c in $(pgrep -P "$MPID" 2>/dev/null); do
        [ -r "/proc/$c/stat" ] && sed 's/.*) //' "/proc/$c/stat" | awk '{ print $12 + $13 }'
      done
    } | awk '{ s += $1 } END { print s + 0 }'
  else
    echo 0
  fi
}

# rate NAME SESSIONS MESSAGES: prints one table row: seconds, msg/s, and
# the milter's CPU milliseconds per message.
rate() {
  local name=$1 sess=$2 msgs=$3 t0 t1 c0 c1
  c0=$(milter_ticks)
  t0=$(date +%s.%N)
  smtp-source -d -s "$sess" -m "$msgs" -l "$SIZE" -f bench@source.example -t rcpt@dest.example "127.0.0.1:$SMTP"
  t1=$(date +%s.%N)
  c1=$(milter_ticks)
  awk -v n="$name" -v s="$sess" -v m="$msgs" -v a="$t0" -v b="$t1" -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%-12s %8s %8s %9.2f %9.1f %9.3f\n", n, s, m, b - a, m / (b - a), 1000 * c / hz / m }'
}

run_with() {
  local name=$1
  shift
  if [ "$name" != none ]; then
    "$@" >"$DIR/$name.log" 2>&1 &
    MPID=$!
    wait_milter
  fi
  # Warm up (Postfix forks smtpd/cleanup on demand), then let the queue
  # drain so one run's deliveries do not load the next.
  smtp-source -d -s 10 -m 200 -l "$SIZE" -f bench@source.example -t rcpt@dest.example "127.0.0.1:$SMTP"
  drain
  rate "$name" 1 "$N1"
  drain
  rate "$name" 10 "$N10"
  drain
  if [ "$name" != none ]; then
    kill -TERM "$MPID"; wait "$MPID" || true; MPID=
    rm -f "$DIR/milter.sock"
  fi
}

echo "socket=$SOCK size=$SIZE profile=$PROFILE cores=$(nproc) reps=$REPS null_args='$NULL_ARGS' $(date -u +%FT%TZ)"
printf "%-12s %8s %8s %9s %9s %9s\n" milter sessions messages seconds msg/s cpu_ms/msg
# The two milters take turns, REPS times, in alternating order, so that a
# change in the machine's load (other guests of a shared host) falls on
# both alike; the summary pairs each turn of bulkwatch with the null turn
# beside it. No pipes into tee here: run_with must run in this shell, so
# the EXIT trap sees MPID and stops a milter left running by a failed run.
: >"$DIR/rows"
turn() {
  if [ "$1" = null ]; then
    # shellcheck disable=SC2086 # NULL_ARGS: options, split on purpose
    run_with null "$NULL" "$NULLSOCK" $NULL_ARGS >"$DIR/rep.rows"
  else
    run_with bulkwatch "$BW" serve --config "$DIR/bulkwatch.toml" >"$DIR/rep.rows"
  fi
  cat "$DIR/rep.rows"
  sed "s/^/$2 /" "$DIR/rep.rows" >>"$DIR/rows"
}
for rep in $(seq 1 "$REPS"); do
  if [ $((rep % 2)) = 1 ]; then turn null "$rep"; turn bulkwatch "$rep"
  else turn bulkwatch "$rep"; turn null "$rep"; fi
done
# Without a milter, once, for reference (restart: a reload leaves idle
# smtpd processes that still talk to the stopped milter for a while).
postfix -c "$DIR/conf" stop >/dev/null
postconf -c "$DIR/conf" -e "smtpd_milters ="
postfix -c "$DIR/conf" start >/dev/null
for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$SMTP") 2>/dev/null && break; sleep 0.05; done
run_with none
# Per session count: the median (and range) of the paired ratios
# bulkwatch/null, the median rates, and the milters' CPU per message.
# Rows in $DIR/rows: rep name sessions messages seconds msg/s cpu_ms/msg.
for sess in 1 10; do
  awk -v s="$sess" -v reps="$REPS" '
    $3 == s && $2 == "null" { n[$1] = $6; nc[$1] = $7 }
    $3 == s && $2 == "bulkwatch" { b[$1] = $6; bc[$1] = $7 }
    function median(a, k,   i, j, t, c, x) {
      c = 0; for (i in a) t[++c] = a[i]
      for (i = 2; i <= c; i++) for (j = i; j > 1 && t[j - 1] > t[j]; j--) { x = t[j]; t[j] = t[j - 1]; t[j - 1] = x }
      if (k == "min") return t[1]; if (k == "max") return t[c]
      return (c % 2) ? t[(c + 1) / 2] : (t[c / 2] + t[c / 2 + 1]) / 2
    }
    END {
      for (r in n) if (r in b) ratio[r] = 100 * b[r] / n[r]
      printf "%s session(s), %d pairs: bulkwatch/null median %.1f%% (range %.1f%% to %.1f%%); median msg/s null %.1f, bulkwatch %.1f; milter CPU ms/msg null %.3f, bulkwatch %.3f\n",
        s, reps, median(ratio), median(ratio, "min"), median(ratio, "max"), median(n), median(b), median(nc), median(bc)
    }' "$DIR/rows"
done
