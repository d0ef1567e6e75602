#!/usr/bin/env bash
# Puts Debian unstable's libtorch-dev (LibTorch 2.x headers) into DIR
# (default build/libtorch2), unpacked with `dpkg -x`, not installed: the
# build keeps Debian 12's 1.13, and torch2_test compiles the LibTorch-using
# sources against these headers with -fsyntax-only, the check that GPU
# machines' LibTorch 2.x will accept them. The system's apt sources and
# state are left alone: apt reads a sid sources file and keeps its lists and
# cache under DIR/apt. Does nothing when DIR already holds the headers.
# SHEFL_DEBIAN_MIRROR replaces http://deb.debian.org/debian.
#   scripts/fetch_libtorch2.sh [DIR]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Absolute: apt reads the paths below relative to its own directories.
DIR="$(realpath -m "${1:-$ROOT/build/libtorch2}")"
HEADER="$DIR/usr/include/torch/csrc/api/include/torch/torch.h"

if [ -e "$HEADER" ] && [ -s "$DIR/VERSION" ]; then
  exit 0
fi

APT="$DIR/apt"
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/debs"
MIRROR="${SHEFL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
     "$MIRROR sid main" > "$APT/sid.list"
OPTS=(-q -o "Dir::Etc::sourcelist=$APT/sid.list" -o Dir::Etc::sourceparts=-
      -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache")

fail() {
  echo "shefl: could not download LibTorch 2.x's headers (Debian sid's" \
       "libtorch-dev) into $DIR: $1. torch2_test fails until they are there;" \
       "rerun scripts/fetch_libtorch2.sh $DIR when $MIRROR is reachable." >&2
  exit 1
}

echo "shefl: downloading Debian sid's libtorch-dev (LibTorch 2.x headers) into $DIR" >&2
apt-get "${OPTS[@]}" update >"$APT/update.log" 2>&1 \
  || fail "apt-get update of sid failed (see $APT/update.log)"
# madison lists the archive's versions only (not the installed 1.13).
version="$(apt-cache "${OPTS[@]}" madison libtorch-dev 2>/dev/null \
           | awk -F' *[|] *' '$2 ~ /^2[.]/ {print $2; exit}')"
case "$version" in
  2.*) ;;
  "") fail "$MIRROR has no sid libtorch-dev 2.x (unreachable? see $APT/update.log)" ;;
esac
rm -f "$APT/debs"/*.deb
(cd "$APT/debs" && apt-get "${OPTS[@]}" download "libtorch-dev=$version") \
  >"$APT/download.log" 2>&1 || fail "apt-get download failed (see $APT/download.log)"

# Unpack beside DIR's headers and move them in whole, so an interrupted run
# leaves no half folder that the check above would take for done.
tmp="$DIR/unpack.tmp"
rm -rf "$tmp" "$DIR/usr"
dpkg -x "$APT/debs"/libtorch-dev_*.deb "$tmp" || fail "dpkg -x failed"
mv "$tmp/usr" "$DIR/usr"
rm -rf "$tmp"
echo "$version" > "$DIR/VERSION"
echo "shefl: LibTorch $version headers in $DIR/usr/include" >&2
