#!/usr/bin/env bash
# A compressed day for a site of several MX hosts (docs/admin/redis.md,
# "A compressed day, measured"): HOSTS `bulkwatch serve` daemons sharing
# one redis-server (MODE=single) or a Redis Cluster of 3 masters and 3
# replicas (MODE=cluster), fed MESSAGES synthetic messages over the milter
# protocol by examples/day.rs as fast as they take them, campaigns spread
# over the hosts. With KILL=1 (cluster: the default) the master that holds
# the site's slot is killed (-9) when half the stream is handed out; its
# replica takes over.
#
# Prints the driver's report (JSON: outcomes, latencies, campaign ids per
# host, probes) and, per host, resident memory (the daemon and its
# workers) and CPU, Redis's memory and CPU per message, the hosts' Redis
# counters. Nothing is written in the repository; the work directory is
# removed unless KEEP=1.
#
#   cargo build --release && cargo build --release --example day
#   MODE=single benches/day.sh             # 2.5 million messages
#   MODE=cluster MESSAGES=250000 benches/day.sh
# Env: MODE, MESSAGES, HOSTS (3), CONNS (connections per host, 4), WORKERS
# (per host, 1), KILL, SAMPLE (seconds between memory samples, 10),
# BASE_PORT (17400), CARGO_TARGET_DIR, KEEP.
#
# Exit status 1 when a message was refused, tempfailed or not answered,
# when the hosts' campaign lists differ at the end, or when a host was
# still judging from its local window at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${MODE:-single}
MESSAGES=${MESSAGES:-2500000}
HOSTS=${HOSTS:-3}
CONNS=${CONNS:-4}
WORKERS=${WORKERS:-1}
SAMPLE=${SAMPLE:-10}
BASE=${BASE_PORT:-17400}
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
BW=$TARGET/release/bulkwatch
DAY=$TARGET/release/examples/day
if [ "$MODE" = cluster ]; then KILL=${KILL:-1}; else KILL=${KILL:-0}; fi
for f in "$BW" "$DAY"; do [ -x "$f" ] || { echo "day: missing $f (cargo build --release; cargo build --release --example day)" >&2; exit 2; }; done
command -v redis-server >/dev/null || { echo "day: needs redis-server" >&2; exit 2; }

DIR=$(mktemp -d /tmp/bwday.XXXXXX)
PIDS=()
cleanup() {
  [ -n "${SAMPLER:-}" ] && kill "$SAMPLER" 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then echo "day: kept $DIR" >&2; else rm -rf "$DIR"; fi
}
trap cleanup EXIT

redis_node() { # port [extra args...]: a redis-server in $DIR/redis-PORT
  local port=$1; shift
  # Another server answering there would pass for this one.
  if redis-cli -p "$port" ping >/dev/null 2>&1; then
    echo "day: port $port is taken by another redis-server (set BASE_PORT)" >&2; exit 1
  fi
  mkdir -p "$DIR/redis-$port"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --protected-mode no --loglevel warning --lazyfree-lazy-expire yes \
    --dir "$DIR/redis-$port" "$@" \
    >"$DIR/redis-$port/log" 2>&1 &
  PIDS+=($!)
  echo "$!" > "$DIR/redis-$port/pid"
  for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "day: redis-server on $port did not start" >&2; exit 1
}

RPORTS=()
if [ "$MODE" = cluster ]; then
  for k in 0 1 2 3 4 5; do
    p=$((BASE + 50 + k)); RPORTS+=("$p")
    redis_node "$p" --cluster-enabled yes --cluster-config-file "$DIR/redis-$p/nodes.conf" \
      --cluster-node-timeout 2000
  done
  redis-cli --cluster create $(printf '127.0.0.1:%s ' "${RPORTS[@]}") \
    --cluster-replicas 1 --cluster-yes >"$DIR/cluster-create.log" 2>&1
  for _ in $(seq 1 100); do
    redis-cli -p "${RPORTS[0]}" cluster info | grep -q cluster_state:ok && break; sleep 0.2
  done
  URLS=$(printf '"redis://127.0.0.1:%s", ' "${RPORTS[@]}")
  URLS="[${URLS%, }]"
  CLUSTER=true
else
  p=$((BASE + 50)); RPORTS+=("$p"); redis_node "$p"
  URLS="[\"redis://127.0.0.1:$p/0\"]"
  CLUSTER=false
fi

# The port of the master that holds the site's slot, asked of node 0.
slot_master() {
  local slot; slot=$(redis-cli -p "${RPORTS[0]}" cluster keyslot '{bulkwatch:v8}')
  redis-cli -p "${RPORTS[0]}" cluster nodes | awk -v s="$slot" '
    $3 ~ /master/ && $8 ~ /connected/ { for (i = 9; i <= NF; i++) { split($i, r, "-");
      if (r[2] == "") r[2] = r[1]; if (s + 0 >= r[1] + 0 && s + 0 <= r[2] + 0) { split($2, a, "[:@]"); print a[2] } } }'
}

HOSTLIST=()
# One site key for all hosts, as a site sets it (not the public built-in).
KEY=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
for h in $(seq 1 "$HOSTS"); do
  mkdir -p "$DIR/host$h/state"
  cat > "$DIR/host$h/bulkwatch.toml" <<TOML
[scan]
ocr = "off"
[fingerprint]
hash_key = "$KEY"
[window]
max_entries = 3000000
[milter]
socket = "inet:127.0.0.1:$((BASE + h))"
workers = $WORKERS
max_connections = 64
[policy]
clean = "tag"
[state]
state_dir = "$DIR/host$h/state"
snapshot_interval_secs = 86400
[metrics]
listen = "127.0.0.1:$((BASE + 20 + h))"
[store]
backend = "redis"
[store.redis]
urls = $URLS
cluster = $CLUSTER
TOML
  if curl -sf "http://127.0.0.1:$((BASE + 20 + h))/metrics" >/dev/null 2>&1; then
    echo "day: port $((BASE + 20 + h)) already answers (set BASE_PORT)" >&2; exit 1
  fi
  "$BW" serve --config "$DIR/host$h/bulkwatch.toml" >"$DIR/host$h/log" 2>&1 &
  PIDS+=($!); echo "$!" > "$DIR/host$h/pid"
  HOSTLIST+=("127.0.0.1:$((BASE + h))")
done
for h in $(seq 1 "$HOSTS"); do
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$((BASE + 20 + h))/metrics" >/dev/null 2>&1 && break; sleep 0.1
  done
  curl -sf "http://127.0.0.1:$((BASE + 20 + h))/metrics" >/dev/null 2>&1 ||
    { echo "day: host$h did not start:" >&2; cat "$DIR/host$h/log" >&2; exit 1; }
done

rss_kb() { # the daemon's RSS and its children's (the workers), in kB (KiB, as /proc says)
  local pid=$1 sum=0 c
  for c in $pid $(pgrep -P "$pid" || true); do
    sum=$((sum + $(awk '/^VmRSS/ { print $2 }' "/proc/$c/status" 2>/dev/null || echo 0)))
  done
  echo "$sum"
}
cpu_s() { # user+system seconds of a pid (children reaped included)
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15 + $16 + $17) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0
}
# Redis CPU: the last sample of each node (a killed master keeps its last).
redis_cpu() { awk '{ c[$1] = $2 } END { for (p in c) t += c[p]; print t + 0 }' "$DIR/redis-cpu.txt" 2>/dev/null || echo 0; }
redis_mem() { # used_memory of every live node, bytes, space-separated
  local p; for p in "${RPORTS[@]}"; do redis-cli -p "$p" info memory 2>/dev/null | awk -F: '/^used_memory:/ { printf "%s:%d ", '"$p"', $2 }'; done
}

echo "day: $MODE, $HOSTS hosts, $MESSAGES messages; redis ${RPORTS[*]}; work dir $DIR" >&2
echo "redis before: $(redis_mem)" >&2
for p in "${RPORTS[@]}"; do echo "$p $(cpu_s "$(cat "$DIR/redis-$p/pid")")" >> "$DIR/redis-cpu.txt"; done
R0=$(redis_cpu)
(
  while :; do
    line="$(date +%s)"
    for h in $(seq 1 "$HOSTS"); do line="$line $(rss_kb "$(cat "$DIR/host$h/pid")")"; done
    echo "$line" >> "$DIR/rss.txt"
    for p in "${RPORTS[@]}"; do
      pid=$(cat "$DIR/redis-$p/pid"); [ -e "/proc/$pid" ] && echo "$p $(cpu_s "$pid")" >> "$DIR/redis-cpu.txt"
    done
    sleep "$SAMPLE"
  done
) &
SAMPLER=$!

KILLCMD=true
if [ "$KILL" = 1 ]; then
  if [ "$MODE" = cluster ]; then
    M=$(slot_master)
    echo "day: the site's slot is on the master at port $M" >&2
    KILLCMD="kill -9 \$(cat $DIR/redis-$M/pid)"
  else
    KILLCMD="kill -9 \$(cat $DIR/redis-${RPORTS[0]}/pid)"
  fi
fi
"$DAY" --hosts "$(IFS=,; echo "${HOSTLIST[*]}")" --messages "$MESSAGES" --conns "$CONNS" \
  --kill-at 0.5 --kill-cmd "$KILLCMD" > "$DIR/report.json"
kill "$SAMPLER" 2>/dev/null || true; SAMPLER=
for p in "${RPORTS[@]}"; do
  pid=$(cat "$DIR/redis-$p/pid"); [ -e "/proc/$pid" ] && echo "$p $(cpu_s "$pid")" >> "$DIR/redis-cpu.txt"
done
R1=$(redis_cpu)
cat "$DIR/report.json"

echo "--- per host (RSS of the daemon and its workers, MB of 10^6 bytes: at the end, the most sampled)"
for h in $(seq 1 "$HOSTS"); do
  pid=$(cat "$DIR/host$h/pid")
  peak=$(awk -v c=$((h + 1)) '$c > m { m = $c } END { print m * 1024 / 1e6 }' "$DIR/rss.txt")
  printf 'host%s: RSS %.0f MB (peak %.0f MB), CPU %s s; ' "$h" "$(($(rss_kb "$pid") * 1024 / 1000000))" "$peak" "$(cpu_s "$pid")"
  curl -sf "http://127.0.0.1:$((BASE + 20 + h))/metrics" | awk '
    /^bulkwatch_window_entries|^bulkwatch_campaigns_active|^bulkwatch_redis_(messages|errors|fallbacks|outages)_total/ { printf "%s %s  ", $1, $2 }
    END { print "" }'
done
# Every host's list of the campaigns of 20 recipients or more: the same
# ids with the same counts on every host when the replicas agree.
for h in $(seq 1 "$HOSTS"); do
  curl -sf "http://127.0.0.1:$((BASE + 20 + h))/campaigns?min_recipients=20&limit=100000" > "$DIR/campaigns$h.json" || echo '[]' > "$DIR/campaigns$h.json"
done
STATUS=0
python3 - "$DIR"/campaigns*.json <<'PY' || STATUS=1
import json, sys
lists = [sorted((c["id"], c["recipients"]) for c in json.load(open(f))) for f in sys.argv[1:]]
same = all(l == lists[0] for l in lists) and len(lists[0]) > 0
print("--- campaigns of 20 recipients or more: %s per host; the same ids and counts on every host: %s"
      % ("/".join(str(len(l)) for l in lists), "yes" if same else "NO"))
if not same:
    for i, l in enumerate(lists[1:], 2):
        d = set(l) ^ set(lists[0])
        print("    host%d differs from host1 in %d: %s" % (i, len(d), sorted(d)[:5]))
sys.exit(0 if same else 1)
PY
python3 - "$DIR/report.json" <<'PY' || STATUS=1
import json, sys
r = json.load(open(sys.argv[1]))
bad = []
if r["failed"] or r["refused_or_tempfailed"]:
    bad.append("%d failed, %d refused or tempfailed" % (r["failed"], r["refused_or_tempfailed"]))
if r["last_copies"]["one_id_on_every_host"] != r["last_copies"]["campaigns"]:
    # Each host got another copy (its own words inserted): a campaign that
    # grew as two parts may take it into either, on every host alike. The
    # hosts' agreement is the campaign lists' check above.
    print("day: note: last copies: %s" % r["last_copies"])
for b in bad:
    print("day: FAILED:", b)
sys.exit(1 if bad else 0)
PY
for h in $(seq 1 "$HOSTS"); do
  # The last copies went to every host after the stream: a host that
  # judged them from Redis is back (bulkwatch_redis_fallbacks_total does
  # not move then; a host still falling back adds 1 a copy).
  if grep -q "shared state reachable again\|redis unavailable" "$DIR/host$h/log"; then
    last=$(grep -h "shared state reachable again\|redis unavailable" "$DIR/host$h/log" | tail -1)
    case "$last" in *unavailable*) echo "day: FAILED: host$h was still off Redis at the end"; STATUS=1;; esac
  fi
done
echo "--- redis: $(redis_mem)"
awk -v a="$R0" -v b="$R1" -v n="$MESSAGES" 'BEGIN { printf "redis CPU: %.1f s, %.1f us a message\n", b - a, (b - a) / n * 1e6 }'
echo "--- rss.txt (time, host RSS kB...)"
awk 'NR % 6 == 1' "$DIR/rss.txt"
echo "--- the hosts' warnings, counted (time and queue id left out)"
grep -h " WARN " "$DIR"/host*/log | sed -E 's/^[^ ]+ +//; s/queue_id=[^}]*/queue_id=.../' | cut -c1-160 \
  | sort | uniq -c | sort -rn | head -8 || true
exit $STATUS
