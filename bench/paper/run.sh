#!/usr/bin/env bash
# Runs a list of (config, seed) pairs through `shefl run`, resumable, then
# `shefl report` over them: the reproduction runs of docs/RESULTS.md.
#   bench/paper/run.sh [LIST] [OUT_DIR] [extra shefl run args...]
# LIST (default bench/paper/table1.list): one run per line,
#   CONFIG SEED [key=value ...]      (# starts a comment)
# e.g. `configs/fmnist-paper.yaml 1 rounds=10`. Each run gets
# OUT_DIR/<config name>-s<SEED>[-<key=value,...>] (default OUT_DIR:
# results/paper). A run whose summary.json exists is finished and skipped;
# one with a checkpoint (killed or crashed) is resumed with --resume; any
# other leftover folder is started afresh. Safe to kill and run again.
# ROUNDS=N in the environment overrides every run's rounds (a quick pass).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh" "$@"  # --help: the header above
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LIST="${1:-$ROOT/bench/paper/table1.list}"; shift || true
OUT="${1:-$ROOT/results/paper}"; shift || true
SHEFL="${SHEFL:-$ROOT/build/bin/shefl}"
[ -x "$SHEFL" ] || { echo "run.sh: no $SHEFL; build first (scripts/run.sh or scripts/test.sh)" >&2; exit 1; }
[ -f "$LIST" ] || { echo "run.sh: no run list $LIST" >&2; exit 2; }
mkdir -p "$OUT"
export OPENBLAS_NUM_THREADS=1
dirs=()
n=0; total="$(grep -cv '^\s*\(#\|$\)' "$LIST" || true)"
while read -r config seed rest; do
  case "$config" in ''|'#'*) continue ;; esac
  n=$((n + 1))
  [[ "$seed" =~ ^[0-9]+$ ]] || { echo "run.sh: $LIST: '$config' needs a numeric seed, got '$seed'" >&2; exit 2; }
  [ -f "$ROOT/$config" ] && config="$ROOT/$config"
  [ -f "$config" ] || { echo "run.sh: $LIST: no config $config" >&2; exit 2; }
  name="$(basename "$config" .yaml)-s$seed"
  sets=(--set "seed=$seed")
  if [ -n "$rest" ]; then
    name="$name-$(echo "$rest" | tr ' ' ',' | tr -c 'A-Za-z0-9=.,_\n-' '_')"
    for kv in $rest; do sets+=(--set "$kv"); done
  fi
  [ -n "${ROUNDS:-}" ] && sets+=(--set "rounds=$ROUNDS")
  dir="$OUT/$name"
  dirs+=("$dir")
  if [ -f "$dir/summary.json" ]; then
    echo "[$n/$total] $name: finished, skipped" >&2
    continue
  fi
  if compgen -G "$dir/checkpoints/*" > /dev/null; then
    echo "[$n/$total] $name: resuming from its last checkpoint" >&2
    "$SHEFL" run --resume "$dir" "$@"
  else
    rm -rf "$dir"
    echo "[$n/$total] $name: starting" >&2
    "$SHEFL" run "$config" --out "$dir" "${sets[@]}" "$@"
  fi
done < "$LIST"
"$SHEFL" report "${dirs[@]}"
