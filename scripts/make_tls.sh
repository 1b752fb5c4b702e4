#!/usr/bin/env bash
# Makes a test CA and, for each NAME, a TLS directory that `darcy --tls-dir` takes:
#   scripts/make_tls.sh DIR [NAME...]      # default NAME: node
# writes DIR/ca.pem and DIR/ca.key (keep the key off the nodes), and DIR/NAME/{ca.pem,node.pem,
# node.key} with a certificate for NAME signed by the CA (valid 365 days, EC P-256). Every node
# and client of a cluster needs a directory whose certificate that CA signed. For tests and
# trials: a production cluster takes its certificates from its own CA.
set -euo pipefail
dir=${1:?usage: make_tls.sh DIR [NAME...]}
shift
names=("$@")
[[ ${#names[@]} -eq 0 ]] && names=(node)
mkdir -p "$dir"
umask 077
if [[ ! -f $dir/ca.pem ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
    -subj "/CN=darcy test CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
fi
for name in "${names[@]}"; do
  out=$dir/$name
  mkdir -p "$out"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$out/node.key" -out "$out/node.csr" 2>/dev/null
  printf 'subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1\n' "$name" > "$out/ext.cnf"
  openssl x509 -req -in "$out/node.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 365 -extfile "$out/ext.cnf" -out "$out/node.pem" 2>/dev/null
  cp "$dir/ca.pem" "$out/ca.pem"
  rm -f "$out/node.csr" "$out/ext.cnf"
  echo "make_tls: $out (ca.pem, node.pem, node.key)"
done
