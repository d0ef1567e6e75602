#!/usr/bin/env bash
# The two Secrets shefl's pods mount, from a folder `shefl certs` wrote:
#   shefl-coordinator-pki  ca.pem, server.pem, server.key, tokens
#   shefl-daemon-pki       ca.pem and every daemon's client-<k>.pem/.key/.token
# ca.key is never sent: it stays where the certificates are made.
# Applied with `kubectl apply`, so running it again after new certificates
# replaces them (then restart the pods). Extra arguments go to kubectl
# (e.g. -n NAMESPACE); --print writes the Secrets' YAML instead.
#   deploy/k8s/secrets.sh PKI_DIR [--print] [kubectl args...]
set -euo pipefail

usage() { echo "usage: deploy/k8s/secrets.sh PKI_DIR [--print] [kubectl args...]" >&2; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  ""|-*) usage; exit 2 ;;
esac
pki="$1"; shift
print=0
if [ "${1:-}" = "--print" ]; then print=1; shift; fi

need() {
  [ -r "$pki/$1" ] || { echo "secrets.sh: $pki/$1 is missing (make it with: shefl certs --out $pki --hosts shefl-coordinator --clients REPLICAS)" >&2; exit 1; }
}
for f in ca.pem server.pem server.key tokens client-0.pem client-0.key client-0.token; do need "$f"; done

coordinator=(--from-file="$pki/ca.pem" --from-file="$pki/server.pem"
             --from-file="$pki/server.key" --from-file="$pki/tokens")
daemons=(--from-file="$pki/ca.pem")
k=0
while [ -e "$pki/client-$k.pem" ]; do
  for ext in pem key token; do need "client-$k.$ext"; daemons+=(--from-file="$pki/client-$k.$ext"); done
  k=$((k + 1))
done
echo "secrets.sh: shefl-coordinator-pki; shefl-daemon-pki with $k daemons' certificates (replicas up to $k)" >&2

render() {
  kubectl create secret generic "$1" "${@:2}" --dry-run=client -o yaml
}
{
  render shefl-coordinator-pki "${coordinator[@]}"
  echo "---"
  render shefl-daemon-pki "${daemons[@]}"
} | if [ "$print" = 1 ]; then cat; else kubectl apply -f - "$@"; fi
