#!/usr/bin/env bash
# The contract fuzzer against a running server: schemathesis 4, every check (`-c all`) and
# every phase (examples, coverage, fuzzing, stateful), on the embedded store in a fresh
# folder, as the caller `fuzzer` (development mode's principal header). Prints schemathesis's
# summary; its exit status is schemathesis's.
#
# Needs Python 3.10 or later. Schemathesis is installed into $SCHEMATHESIS_VENV (default
# /tmp/schemathesis-venv), never into the repository.
#   scripts/schemathesis.sh [more schemathesis options, e.g. --max-examples 50]
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${SCHEMATHESIS_VENV:-/tmp/schemathesis-venv}
if [ ! -x "$VENV/bin/schemathesis" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet 'schemathesis>=4,<5' >&2
fi

# BINARY: a build already at hand (else the debug build is made here).
BINARY=${BINARY:-}
if [ -z "$BINARY" ]; then
    cargo build --quiet
    BINARY=target/debug/cosmos-blog
fi

work=$(mktemp -d)
"$BINARY" serve --port 0 --port-file "$work/port" --data-dir "$work/data" \
    >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 600); do
    [ -s "$work/port" ] && break
    sleep 0.2
done
port=$(cat "$work/port")

"$VENV/bin/schemathesis" run "http://127.0.0.1:$port/api/openapi.json" \
    --checks all --phases examples,coverage,fuzzing,stateful \
    --header 'x-ms-client-principal-id: fuzzer' --no-color "$@"
