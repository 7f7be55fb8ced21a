#!/usr/bin/env bash
# Soak: smtp-source drives a private Postfix with bulkwatch as its milter for
# DURATION seconds with WORKERS concurrent clients, mixed sizes, campaigns
# and one-off messages. At the end the queue drains and the script counts:
# every message smtp-source handed over must be delivered to smtp-sink (the
# policy is tag, so nothing is rejected), no milter error or timeout may
# appear in the Postfix log, and bulkwatch's resident memory is sampled
# every SAMPLE seconds (rss.csv; printed as a curve).
#
# Exit status: 0 when none was lost, no milter trouble was logged and the
# memory after warm-up grew by less than RSS_SLACK_MB; 1 otherwise.
#
# Needs root and postfix (see docs/dev/development.md, "A private Postfix").
#   cargo build --release && benches/soak.sh              # 10 minutes
#   DURATION=45 PROFILE=debug benches/soak.sh              # CI's short run
#   REDIS=1 benches/soak.sh    # shared state in a redis-server of its own,
#                              # killed (-9) at 1/3 and restarted at 2/3
# Env: DURATION, WORKERS, MAX_ENTRIES (window cap, default 20000), SAMPLE, RSS_SLACK_MB, PROFILE, CARGO_TARGET_DIR,
# SMTP_PORT / SINK_PORT, KEEP=1 keeps the work directory.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-600}
WORKERS=${WORKERS:-6}
SAMPLE=${SAMPLE:-10}
RSS_SLACK_MB=${RSS_SLACK_MB:-64}
PROFILE=${PROFILE:-release}
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
BW=$TARGET/$PROFILE/bulkwatch
SMTP=${SMTP_PORT:-13525}
SINK=${SINK_PORT:-13526}
RPORT=${REDIS_PORT:-13527}

[ "$(id -u)" = 0 ] || { echo "soak: needs root (private postfix instance)" >&2; exit 2; }
for f in "$BW" /usr/sbin/postfix /usr/sbin/smtp-source /usr/sbin/smtp-sink; do
  [ -x "$f" ] || { echo "soak: missing $f" >&2; exit 2; }
done

DIR=$(mktemp -d /tmp/bwsoak.XXXXXX)
chmod 0755 "$DIR"
mkdir -p "$DIR"/{conf,queue,data,state,msgs,runs}
chown postfix "$DIR/data"

cleanup() {
  [ -n "${SAMPLER:-}" ] && kill "$SAMPLER" 2>/dev/null || true
  postfix -c "$DIR/conf" stop >/dev/null 2>&1 || true
  [ -n "${SINKPID:-}" ] && kill "$SINKPID" 2>/dev/null || true
  [ -n "${BWPID:-}" ] && kill "$BWPID" 2>/dev/null || true
  [ -n "${REDISPID:-}" ] && kill "$REDISPID" 2>/dev/null || true
  # Wait for them to exit: a run that starts right after this one (CI runs
  # two) binds the same ports, and a Redis still shutting down here once
  # answered the next run's ping while its own Redis could not bind.
  for p in ${SINKPID:-} ${BWPID:-} ${REDISPID:-}; do wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then echo "soak: kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT

cat > "$DIR/conf/main.cf" <<CF
compatibility_level = 3.6
queue_directory = $DIR/queue
data_directory = $DIR/data
mail_owner = postfix
myhostname = mx.soak.example
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
smtpd_milters = unix:$DIR/milter.sock
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
socket = "unix:$DIR/milter.sock"
socket_mode = "0666"
[state]
state_dir = "$DIR/state"
snapshot_interval_secs = 30
[metrics]
listen = ""
[thresholds]
bulk_threshold = 20.0
suspect_threshold = 5.0
# A window that fills within the warm-up, so that "flat after warm-up"
# tests the caps rather than a 6-hour window still filling.
[window]
max_entries = ${MAX_ENTRIES:-20000}
[exact]
bloom_items = ${MAX_ENTRIES:-20000}
CF
start_redis() {
  # The port must be free: another server answering there would pass for
  # ours (the ping below), and ours would fail to bind.
  for _ in $(seq 1 200); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 || break; sleep 0.05; done
  if redis-cli -p "$RPORT" ping >/dev/null 2>&1; then
    echo "soak: port $RPORT is taken by another redis-server (set REDIS_PORT)" >&2; exit 1
  fi
  redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no \
    --loglevel warning --dir "$DIR" >/dev/null 2>&1 &
  REDISPID=$!
  for _ in $(seq 1 200); do
    if redis-cli -p "$RPORT" ping >/dev/null 2>&1 && kill -0 "$REDISPID" 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "soak: redis-server did not come up on port $RPORT" >&2; exit 1
}
if [ -n "${REDIS:-}" ]; then
  start_redis
  cat >> "$DIR/bulkwatch.toml" <<CF
[store]
backend = "redis"
[store.redis]
urls = ["redis://127.0.0.1:$RPORT/0"]
retry_secs = 1
CF
fi

# Message files: three campaigns at three sizes (every smtp-source run sends
# its file many times: copies of one campaign), and one-off messages made
# of numbered words (each run of one sends a distinct text).
words="offer account premium savings discount verify identity reward shipping order"
campaign() { # NAME PARAGRAPHS
  {
    printf 'From: Deals <offers@deals.example>\nTo: you@dest.example\nSubject: Campaign %s\n\n' "$1"
    for p in $(seq 1 "$2"); do
      printf 'Dear customer, your %s qualifies for our %s programme number %s. ' $words | head -c 400
      printf '\nVisit https://track.deals.example/c/%s to confirm paragraph %s of campaign %s.\n\n' "$p" "$p" "$1"
    done
  } > "$DIR/msgs/$1"
}
campaign small 3
campaign medium 40
campaign large 250
oneoff() { # N
  {
    printf 'From: person%s@ham.example\nTo: you@dest.example\nSubject: note %s\n\n' "$1" "$1"
    awk -v n="$1" 'BEGIN { srand(n); a = "abcdefghijklmnopqrstuvwxyz";
      for (i = 0; i < 60 + n % 200; i++) {
        w = ""; l = 3 + int(rand() * 6)
        for (j = 0; j < l; j++) w = w substr(a, 1 + int(rand() * 26), 1)
        printf "%s%s", w, (i % 12 == 11 ? ".\n" : " ")
      } }'
    printf '\n'
  } > "$DIR/msgs/oneoff-$1"
}
for n in $(seq 1 200); do oneoff "$n"; done

"$BW" serve --config "$DIR/bulkwatch.toml" >"$DIR/bulkwatch.log" 2>&1 &
BWPID=$!
for _ in $(seq 1 400); do [ -S "$DIR/milter.sock" ] && break; sleep 0.05; done
[ -S "$DIR/milter.sock" ] || { echo "soak: bulkwatch did not come up" >&2; cat "$DIR/bulkwatch.log" >&2; exit 1; }
smtp-sink -u postfix "127.0.0.1:$SINK" 1000 >/dev/null 2>&1 &
SINKPID=$!
postfix -c "$DIR/conf" start >/dev/null
for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$SMTP") 2>/dev/null && break; sleep 0.05; done

rss_mb() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$BWPID/status"; }
(
  t=0
  while kill -0 "$BWPID" 2>/dev/null; do
    echo "$t,$(rss_mb)" >> "$DIR/rss.csv"
    sleep "$SAMPLE"; t=$((t + SAMPLE))
  done
) &
SAMPLER=$!

# worker ID: until the deadline, alternate a campaign burst and a few
# one-offs; each smtp-source run that exits 0 appends its count.
END=$(( $(date +%s) + DURATION ))
worker() {
  local id=$1 i=0 f m
  while [ "$(date +%s)" -lt "$END" ]; do
    i=$((i + 1))
    case $(( (id + i) % 4 )) in
      0) f=small; m=40 ;;
      1) f=medium; m=20 ;;
      2) f=large; m=5 ;;
      *) f=oneoff-$(( (id * 37 + i) % 200 + 1 )); m=1 ;;
    esac
    if smtp-source -s 2 -m "$m" -F "$DIR/msgs/$f" -f "soak$id@source.example" \
         -t rcpt@dest.example "127.0.0.1:$SMTP" >/dev/null 2>>"$DIR/runs/errors"; then
      echo "$m" >> "$DIR/runs/w$id"
    else
      echo "soak: worker $id: smtp-source failed on $f" >> "$DIR/runs/errors"
    fi
  done
}
echo "soak: ${DURATION}s, $WORKERS workers, profile $PROFILE, $(nproc) cores, $(date -u +%FT%TZ)"
WPIDS=()
for w in $(seq 1 "$WORKERS"); do worker "$w" & WPIDS+=($!); done
if [ -n "${REDIS:-}" ]; then
  sleep $((DURATION / 3)); kill -9 "$REDISPID"; wait "$REDISPID" 2>/dev/null || true
  echo "soak: redis killed at $((DURATION / 3))s"
  sleep $((DURATION / 3)); start_redis
  echo "soak: redis restarted at $((2 * DURATION / 3))s"
fi
wait "${WPIDS[@]}" 2>/dev/null || true

# Drain, then count.
for _ in $(seq 1 1200); do
  postqueue -c "$DIR/conf" -p 2>/dev/null | grep -q "Mail queue is empty" && break
  sleep 0.25
done
sent=$(cat "$DIR"/runs/w* 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
delivered=$(grep -c " status=sent " "$DIR/maillog" || true)
milter_trouble=$(grep -ciE "milter.*(timeout|can't read|error|unavailable)" "$DIR/maillog" || true)
failed_runs=$(grep -c "smtp-source failed" "$DIR/runs/errors" 2>/dev/null || true)
kill "$SAMPLER" 2>/dev/null || true; SAMPLER=
echo "rss $(rss_mb)" > /dev/null
echo "soak: sent $sent, delivered $delivered, lost $((sent - delivered)), milter errors/timeouts $milter_trouble, failed client runs $failed_runs"
echo "soak: rate $(awk -v s="$sent" -v d="$DURATION" 'BEGIN { printf "%.0f", s / d }') msg/s"
echo "soak: bulkwatch resident memory (seconds,MB):"
tr '\n' ' ' < "$DIR/rss.csv"; echo
verdicts=$(grep -c "queue_id" "$DIR/bulkwatch.log" || true)
echo "soak: bulkwatch log lines with a queue id: $verdicts"
if [ -n "${REDIS:-}" ]; then
  echo "soak: redis fallbacks logged: $(grep -c "judged from the local window" "$DIR/bulkwatch.log" || true), keys now: $(redis-cli -p "$RPORT" dbsize)"
fi

# Memory after warm-up (the first third) must stay within the slack.
growth=$(awk -F, -v d="$DURATION" '$1 >= d / 3 { if (base == "") base = $2; last = $2 } END { printf "%.0f", last - base }' "$DIR/rss.csv")
echo "soak: memory growth after warm-up: ${growth} MB (allowed ${RSS_SLACK_MB})"
status=0
[ "$sent" -gt 0 ] || { echo "soak: nothing was sent" >&2; status=1; }
[ "$sent" -eq "$delivered" ] || { echo "soak: messages lost" >&2; status=1; }
[ "$milter_trouble" -eq 0 ] || { echo "soak: milter trouble in the Postfix log" >&2; grep -iE "milter" "$DIR/maillog" | head -5 >&2; status=1; }
[ "${growth:-0}" -le "$RSS_SLACK_MB" ] || { echo "soak: memory grew" >&2; status=1; }
kill -TERM "$BWPID"; wait "$BWPID" || { echo "soak: bulkwatch exited non-zero" >&2; status=1; }
BWPID=
exit $status
