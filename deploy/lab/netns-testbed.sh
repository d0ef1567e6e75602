#!/usr/bin/env bash
# A three-host "lab" on one machine: network namespaces for a coordinator
# host and two daemon hosts on a Linux bridge (in a namespace of its own),
# addresses from 198.18.0.0/15 (reserved for network test beds), each
# daemon host's link shaped both ways with tc tbf to RATE. It runs a real
# shefl run across it with mutual TLS and a token, then prints, per daemon
# host, the bytes shefl accounted against the kernel's counters of that
# host's interface (ip -s link), and the ratio per direction. Needs root.
# Everything it creates is removed on every exit path.
#
#   deploy/lab/netns-testbed.sh BIN_DIR CONFIG OUT_DIR [RATE]   (RATE: 50mbit)
set -euo pipefail

BIN=${1:?usage: netns-testbed.sh BIN_DIR CONFIG OUT_DIR [RATE]}
CONFIG=${2:?config}
OUT=${3:?out dir}
RATE=${4:-50mbit}
TAG="sl$$"                    # unique per run: tests may run side by side
SW="$TAG-sw" C="$TAG-c" D1="$TAG-d1" D2="$TAG-d2"
NETS=("$SW" "$C" "$D1" "$D2")
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for ns in "${NETS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

mkdir -p "$OUT"
echo "lab: namespaces $TAG-*" >&2
for ns in "${NETS[@]}"; do ip netns add "$ns"; done
ip -n "$SW" link add br0 type bridge
ip -n "$SW" link set br0 up
# host NS gets eth0 = ADDR; its peer sits on the bridge.
attach() {
  local ns=$1 addr=$2 port=$3
  ip link add "$TAG-$port" type veth peer name eth0 netns "$ns"
  ip link set "$TAG-$port" netns "$SW"
  ip -n "$SW" link set "$TAG-$port" master br0 up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}
attach "$C" 198.18.0.1 c
attach "$D1" 198.18.0.2 d1
attach "$D2" 198.18.0.3 d2
# Shape each daemon host's link: its egress, and the bridge port's egress
# toward it (its ingress).
for d in d1 d2; do
  ns="$TAG-$d"
  ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$RATE" burst 64kb latency 200ms
  ip netns exec "$SW" tc qdisc add dev "$TAG-$d" root tbf rate "$RATE" burst 64kb latency 200ms
done

"$BIN/shefl" certs --out "$OUT/pki" --hosts 198.18.0.1 --clients 2 >/dev/null
ip netns exec "$C" "$BIN/shefl-coordinator" --config "$CONFIG" \
  --listen 198.18.0.1:50051 --out "$OUT/run" --threads 1 \
  --tls-cert "$OUT/pki/server.pem" --tls-key "$OUT/pki/server.key" \
  --tls-client-ca "$OUT/pki/ca.pem" --token-file "$OUT/pki/token" \
  >"$OUT/coordinator.log" 2>&1 &
PIDS+=($!)
coordinator=$!
i=0
for d in d1 d2; do
  ip netns exec "$TAG-$d" "$BIN/shefl-client" --coordinator 198.18.0.1:50051 \
    --clients "$((i * 4))-$((i * 4 + 3))" --name "$d" --threads 1 \
    --out "$OUT/run/daemons" --tls-ca "$OUT/pki/ca.pem" \
    --tls-cert "$OUT/pki/client-$i.pem" --tls-key "$OUT/pki/client-$i.key" \
    --token-file "$OUT/pki/token" >"$OUT/$d.log" 2>&1 &
  PIDS+=($!)
  i=$((i + 1))
done
echo "lab: coordinator 198.18.0.1, daemons 198.18.0.2-3, links shaped to $RATE" >&2
if ! wait "$coordinator"; then
  echo "lab: the coordinator failed; its log:" >&2
  tail -20 "$OUT/coordinator.log" >&2
  exit 1
fi
for pid in "${PIDS[@]:1}"; do wait "$pid" || { echo "lab: a daemon failed" >&2; exit 1; }; done

# Kernel bytes of a daemon host's eth0 (tx = up, rx = down), against the
# bytes that crossed its wire by its daemon's books (its round lines, model
# downloads at their physical size, plus its registration, which
# no round holds: the coordinator's books have it as control traffic of
# round 0, so it is taken from the daemon's log-free side: jsonl only).
counters() { ip -n "$1" -s -j link show eth0; }
for d in d1 d2; do
  python3 - "$(counters "$TAG-$d")" "$OUT/run/daemons/$d.jsonl" "$d" <<'PY'
import json, sys
link = json.loads(sys.argv[1])[0]["stats64"]
up = down = 0
for line in open(sys.argv[2]):
    j = json.loads(line)
    up += j["bytes_up"] + j["daemon_bytes"]["control_up"] + sum(
        c["control_up"] for c in j["bytes_by_client"].values())
    down += j["bytes_down"] + j["daemon_bytes"]["control_down"] + sum(
        c["control_down"] for c in j["bytes_by_client"].values())
    # The books count each client's model download as its own (logical);
    # the daemon fetched each version once for its clients (physical).
    dl = j.get("downloads")
    if dl:
        up -= dl["logical"]["up"] - dl["physical"]["up"]
        down -= dl["logical"]["down"] - dl["physical"]["down"]
print(f"lab: {sys.argv[3]} up   accounted {up} kernel {link['tx']['bytes']} "
      f"ratio {link['tx']['bytes'] / max(up, 1):.4f}")
print(f"lab: {sys.argv[3]} down accounted {down} kernel {link['rx']['bytes']} "
      f"ratio {link['rx']['bytes'] / max(down, 1):.4f}")
PY
done
