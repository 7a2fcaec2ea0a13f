#!/usr/bin/env bash
# The anchors (../shared/anchors) side by side with Palisade: the same three workloads (u1
# one client on its own lock, u64 64 clients each on its own lock, c 16 clients on one lock)
# through each system's own lock API on this machine, one after the other, so that the
# ratios come from one sitting. Results: one JSON line per test in .anchors/results-*.jsonl,
# and at the end a table of them (bench/anchors-summary.ts): per system and test the rate, the
# acquire p50, and the CPU µs per cycle of the servers and of the client, with ratios to etcd
# and ZooKeeper where they ran.
#
#   bench/anchors.sh [palisade] [etcd] [zk]        (default: palisade)
#   DURATION=10 ANCHORS=../shared/anchors bench/anchors.sh palisade etcd
#
# palisade  a fresh bench cluster (bench/cluster-up.ts: 3 nodes, fsync on, the Timing of
#           cluster.config.json), then .anchors/lockbench-palisade.mjs against it. The script
#           imports 'palisade/client', the SDK's name before the package was renamed
#           palisade-server: the copy into .anchors/ (gitignored) imports 'palisade-server/client',
#           which resolves to this package's dist/ from a file inside the project folder.
# etcd, zk  the anchors' own cluster scripts, from a copy in /tmp/anchors (the shared folder
#           is read-only); they need `apt-get install -y etcd-server etcd-client zookeeper
#           default-jre-headless` and `npm ci` in the copy (done here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
ANCHORS=${ANCHORS:-$PWD/../shared/anchors}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-1}
mkdir -p .anchors
OUT=${OUT:-$PWD/.anchors/results-$(date +%Y%m%dT%H%M%S).jsonl}
systems=("$@")
[ ${#systems[@]} -eq 0 ] && systems=(palisade)

run_palisade() {
  cp "$ANCHORS/bench-lib.mjs" "$ANCHORS/lockbench-palisade.mjs" .anchors/
  sed -i "s#'palisade/client'#'palisade-server/client'#g; s#\"palisade/client\"#\"palisade-server/client\"#g" .anchors/lockbench-palisade.mjs
  local info=.anchors/cluster.json
  rm -f "$info"
  # stdin from a fifo we hold open: closing it (or the trap) stops the cluster.
  local fifo=.anchors/cluster.stdin
  rm -f "$fifo" && mkfifo "$fifo"
  node --import tsx bench/cluster-up.ts --info "$info" <"$fifo" >/dev/null &
  local up=$!
  exec 9>"$fifo"
  trap 'exec 9>&-; wait '"$up"' 2>/dev/null || true' RETURN
  for _ in $(seq 1 600); do [ -s "$info" ] && break; kill -0 "$up" 2>/dev/null || { echo "cluster did not start" >&2; return 1; }; sleep 0.1; done
  local endpoints pids
  endpoints=$(node -e 'const i=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); console.log(i.endpoints.join(","))' "$info")
  pids=$(node -e 'const i=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); console.log(i.pids.join(","))' "$info")
  echo "palisade cluster: $endpoints (pids $pids)"
  ANCHOR_SERVER_PIDS=$pids node .anchors/lockbench-palisade.mjs --endpoints "$endpoints" \
    --duration "$DURATION" --warmup "$WARMUP" --label palisade --out "$OUT"
}

anchor_copy() {
  if [ ! -d /tmp/anchors/node_modules ]; then
    rm -rf /tmp/anchors && cp -r "$ANCHORS" /tmp/anchors && (cd /tmp/anchors && npm ci --silent)
  fi
}

run_etcd() {
  anchor_copy
  (cd /tmp/anchors && ./etcd-cluster.sh start &&
    trap './etcd-cluster.sh stop' EXIT &&
    ANCHOR_SERVER_PIDS=$(pgrep -d, -f -- '--data-dir /tmp/anchor-etcd/' || true) \
      node lockbench-etcd.mjs --tests v3-u1,v3-u64,v3-c --duration "$DURATION" --warmup "$WARMUP" --label etcd --out "$OUT")
}

run_zk() {
  anchor_copy
  (cd /tmp/anchors && ./zk-cluster.sh start &&
    trap './zk-cluster.sh stop' EXIT &&
    ANCHOR_SERVER_PIDS=$(./zk-cluster.sh pids | tr ' ' ',') \
      node lockbench-zk.mjs --duration "$DURATION" --warmup "$WARMUP" --label zk --out "$OUT")
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
for s in "${systems[@]}"; do
  case "$s" in
    palisade) run_palisade ;;
    etcd) run_etcd ;;
    zk) run_zk ;;
    *) echo "unknown system: $s (palisade, etcd, zk)" >&2; exit 2 ;;
  esac
done
echo "results: $OUT"
if [ -s "$OUT" ]; then node --import tsx bench/anchors-summary.ts "$OUT"; fi
