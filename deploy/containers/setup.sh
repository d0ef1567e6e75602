#!/usr/bin/env bash
# Podman on this machine for shefl's compose testbed (docs/DEPLOYMENT.md,
# "Containers with podman"). Idempotent: each step is skipped when its result is there.
#   1. Debian's podman, podman-compose, runc, debootstrap, CNI plugins with
#      dnsname and dnsmasq (service names between containers).
#   2. /etc/containers/containers.conf from deploy/containers/containers.conf
#      (runc, ulimits under the hard limits, CNI, subnets in 198.19.0.0/16).
#   3. The Debian base image (no registry is reachable): debootstrap from the
#      machine's own apt mirror, piped into `podman import`.
#   4. Prometheus from Debian's package, and the Grafana stand-in that prints
#      why Grafana is skipped (Grafana has no Debian package).
#   5. Unless --no-testbed: the shefl image (prebuilt binaries from build/bin
#      when they are there, else built from source), deploy/compose/pki, and
#      deploy/compose/.env, the local profile podman-compose reads.
# Then: podman-compose -f deploy/compose/docker-compose.yml up
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/deploy/containers"
BASE_IMAGE="${SHEFL_BASE_IMAGE:-localhost/shefl-debian:bookworm}"
PROMETHEUS_IMAGE=localhost/shefl-prometheus:latest
GRAFANA_IMAGE=localhost/shefl-grafana-skipped:latest
SHEFL_IMAGE=localhost/shefl:latest
TESTBED=1
[ "${1:-}" = "--no-testbed" ] && TESTBED=0

say() { echo "containers: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { say "run as root (rootful podman)"; exit 1; }

PACKAGES=(podman podman-compose runc debootstrap containernetworking-plugins
          golang-github-containernetworking-plugin-dnsname dnsmasq-base iptables)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

write_conf() {
  local conf=/etc/containers/containers.conf
  cmp -s "$HERE/containers.conf" "$conf" && return 0
  if [ -e "$conf" ] && [ ! -e "$conf.before-shefl" ] \
     && ! grep -q "deploy/containers/setup.sh" "$conf"; then
    cp -a "$conf" "$conf.before-shefl"
    say "kept the former $conf as $conf.before-shefl"
  fi
  install -m 0644 "$HERE/containers.conf" "$conf"
  say "wrote $conf"
}

# Debian's podman ships the default network `podman` (used by `podman
# build`'s RUN steps) as a CNI file on 10.88.0.0/16, which containers.conf's
# default_subnet does not change: move it to 198.19.0.0/24.
default_network() {
  local f=/etc/cni/net.d/87-podman-bridge.conflist
  [ -f "$f" ] && grep -q '10\.88\.' "$f" || return 0
  [ -z "$(podman ps -q --filter network=podman)" ] \
    || { say "containers run on network podman (10.88.0.0/16); left as it is"; return 0; }
  sed -i 's|10\.88\.0\.0/16|198.19.0.0/24|; s|10\.88\.0\.1|198.19.0.1|' "$f"
  # The bridge keeps its old address until it is made again.
  ip link del cni-podman0 2>/dev/null || true
  say "default network podman: 198.19.0.0/24 in $f (was 10.88.0.0/16)"
}

# The first URI of the machine's apt sources whose path ends in /$1
# (debian or debian-security), deb822 files first.
apt_uri() {
  { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/{for (i = 2; i <= NF; i++) print $i}'
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | awk '/^deb /{for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}'
  } | grep -E "/$1/?\$" | head -1 | sed 's:/*$::' || true
}

base_image() {
  podman image exists "$BASE_IMAGE" && return 0
  local suite mirror security dir start
  suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
  mirror="$(apt_uri debian)"; mirror="${mirror:-http://deb.debian.org/debian}"
  security="$(apt_uri debian-security)"
  say "building $BASE_IMAGE: debootstrap --variant=minbase $suite from $mirror"
  start=$SECONDS
  dir="$(mktemp -d /var/tmp/shefl-rootfs.XXXXXX)"
  trap 'rm -rf "$dir"' RETURN
  debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$dir.log" 2>&1 \
    || { tail -20 "$dir.log" >&2; rm -f "$dir.log"; return 1; }
  rm -f "$dir.log"
  {
    echo "deb $mirror $suite main"
    echo "deb $mirror $suite-updates main"
    [ -n "$security" ] && echo "deb $security $suite-security main"
  } >"$dir/etc/apt/sources.list"
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  tar -C "$dir" --numeric-owner -c . \
    | podman import -q --change 'CMD ["/bin/bash"]' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        - "$BASE_IMAGE" >/dev/null
  say "$BASE_IMAGE built in $((SECONDS - start)) s"
}

# build_if_missing IMAGE DOCKERFILE: context deploy/containers.
build_if_missing() {
  podman image exists "$1" && return 0
  say "building $1 from $2"
  podman build -q --build-arg "BASE_IMAGE=$BASE_IMAGE" -f "$HERE/$2" -t "$1" "$HERE" >/dev/null
}

shefl_image() {
  podman image exists "$SHEFL_IMAGE" && return 0
  local bin="${SHEFL_BIN_DIR:-$ROOT/build/bin}"
  if [ -x "$bin/shefl-coordinator" ] && [ -x "$bin/shefl-client" ] && [ -x "$bin/shefl" ]; then
    "$HERE/build-image.sh" --prebuilt "$bin" --tag "$SHEFL_IMAGE"
  else
    "$HERE/build-image.sh" --from-source --tag "$SHEFL_IMAGE"
  fi
}

# Certificates for the host name `coordinator`, client-0 (the CPU daemons)
# and client-1 (daemon-gpu), readable by the image's user (uid 10001)
# through the bind mounts compose makes of them; ca.key stays root's.
pki() {
  local out="$ROOT/deploy/compose/pki"
  [ -e "$out/token" ] && return 0
  mkdir -p "$out"
  podman run --rm --user 0 -v "$out:/pki:Z" "$SHEFL_IMAGE" \
    shefl certs --out /pki --hosts coordinator --clients 2 --owner 10001 >/dev/null
  say "wrote $out"
}

local_profile() {
  local env="$ROOT/deploy/compose/.env"
  [ -e "$env" ] && return 0
  cat >"$env" <<ENV
# The local profile (written by deploy/containers/setup.sh; podman-compose
# and docker-compose read it from here): images built on this machine, no
# GPU daemon, and Grafana's stand-in, which prints why it is skipped.
SHEFL_IMAGE=$SHEFL_IMAGE
SHEFL_PROMETHEUS_IMAGE=$PROMETHEUS_IMAGE
SHEFL_GRAFANA_IMAGE=$GRAFANA_IMAGE
SHEFL_GRAFANA_RESTART=no
SHEFL_GPU_DAEMONS=0
ENV
  say "wrote $env"
}

install_packages
write_conf
default_network
base_image
build_if_missing "$PROMETHEUS_IMAGE" Dockerfile.prometheus
build_if_missing "$GRAFANA_IMAGE" Dockerfile.grafana-skipped
if [ "$TESTBED" = 1 ]; then
  shefl_image
  pki
  local_profile
fi
say "ready"
