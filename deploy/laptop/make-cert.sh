#!/usr/bin/env bash
# make-cert.sh [DIR]: a CA of your own and a certificate for kproxy's
# listeners on this machine (localhost, 127.0.0.1), valid 825 days, in DIR
# (default deploy/laptop/tls). Clients trust DIR/ca.pem instead of the
# cluster's CA; kproxy keeps verifying the cluster's certificates itself.
set -euo pipefail
dir="${1:-$(dirname "${BASH_SOURCE[0]}")/tls}"
mkdir -p "$dir"
cd "$dir"
umask 077
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 825 \
	-subj "/CN=kproxy local CA" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout kproxy-key.pem -out kproxy.csr -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >kproxy.ext
openssl x509 -req -in kproxy.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out kproxy.pem -days 825 \
	-extfile kproxy.ext 2>/dev/null
rm -f kproxy.csr kproxy.ext
chmod 644 ca.pem kproxy.pem
echo "make-cert.sh: $dir/ca.pem (give it to your clients), $dir/kproxy.pem and $dir/kproxy-key.pem (kproxy's)"
