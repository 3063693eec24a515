#!/bin/sh
# Makes a throwaway TLS test PKI for the broker in DIR (for tests and local trials; never for production):
#   ca.crt ca.key            a self-signed certificate authority ("mqttchat test CA", or $CA_NAME)
#   server.crt server.key    a server certificate for 127.0.0.1 and localhost (subjectAltName), signed by the CA
#   NAME.crt NAME.key        one client certificate with CN=NAME per extra argument, signed by the CA
# EC P-256 keys, valid for 2 days. Usage: scripts/make-test-certs.sh DIR [CLIENT_CN...]
set -eu
if [ $# -lt 1 ]; then
    echo "usage: $0 DIR [CLIENT_CN...]" >&2
    exit 2
fi
dir=$1
shift
mkdir -p "$dir"
cd "$dir"
key_options="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

# shellcheck disable=SC2086
openssl req -x509 $key_options -days 2 -keyout ca.key -out ca.crt -subj "/CN=${CA_NAME:-mqttchat test CA}" 2>/dev/null

sign() { # sign NAME SUBJECT [EXTFILE]
    # shellcheck disable=SC2086
    openssl req $key_options -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
    if [ $# -ge 3 ]; then
        openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$3" -out "$1.crt" 2>/dev/null
    else
        openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out "$1.crt" 2>/dev/null
    fi
    rm -f "$1.csr"
}

printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > server.ext
sign server "/CN=127.0.0.1" server.ext
rm -f server.ext
for name in "$@"; do
    sign "$name" "/CN=$name"
done
