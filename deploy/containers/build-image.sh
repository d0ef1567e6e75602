#!/usr/bin/env bash
# Builds the shefl image with podman on the debootstrap base image of
# deploy/containers/setup.sh (no registry needed):
#   build-image.sh --from-source [--tag T]     docker/Dockerfile: compiles
#       in a builder stage (slow: LibTorch sources; the runtime stage holds
#       no compiler)
#   build-image.sh --prebuilt BIN_DIR [--tag T] docker/Dockerfile.prebuilt:
#       the same runtime stage around BIN_DIR's shefl, shefl-coordinator
#       and shefl-client (stripped copies in a small temporary context)
# Default tag localhost/shefl:latest. Prints the build's seconds and the
# image's size.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BASE_IMAGE="${SHEFL_BASE_IMAGE:-localhost/shefl-debian:bookworm}"
MODE="" BIN="" TAG=localhost/shefl:latest
while [ $# -gt 0 ]; do
  case "$1" in
    --from-source) MODE=source; shift ;;
    --prebuilt) MODE=prebuilt; BIN="${2:?--prebuilt needs BIN_DIR}"; shift 2 ;;
    --tag) TAG="${2:?--tag needs a name}"; shift 2 ;;
    *) echo "build-image.sh: unknown argument '$1' (--from-source | --prebuilt BIN_DIR, --tag T)" >&2
       exit 2 ;;
  esac
done
[ -n "$MODE" ] || { echo "build-image.sh: --from-source or --prebuilt BIN_DIR" >&2; exit 2; }
podman image exists "$BASE_IMAGE" \
  || { echo "build-image.sh: no $BASE_IMAGE; run deploy/containers/setup.sh" >&2; exit 1; }

start=$(date +%s.%N)
if [ "$MODE" = source ]; then
  podman build --build-arg "DEBIAN_IMAGE=$BASE_IMAGE" -f "$ROOT/docker/Dockerfile" \
    -t "$TAG" "$ROOT"
else
  ctx="$(mktemp -d /var/tmp/shefl-image.XXXXXX)"
  trap 'rm -rf "$ctx"' EXIT
  mkdir "$ctx/bin"
  for b in shefl shefl-coordinator shefl-client; do
    [ -x "$BIN/$b" ] || { echo "build-image.sh: no $BIN/$b" >&2; exit 1; }
    strip --strip-debug -o "$ctx/bin/$b" "$BIN/$b"
  done
  podman build --build-arg "DEBIAN_IMAGE=$BASE_IMAGE" \
    -f "$ROOT/docker/Dockerfile.prebuilt" -t "$TAG" "$ctx"
fi
end=$(date +%s.%N)
size=$(podman image inspect --format '{{.Size}}' "$TAG")
echo "build-image.sh: $TAG ($MODE) built in $(awk "BEGIN { printf \"%.1f\", $end - $start }") s, $((size / 1000000)) MB" >&2
