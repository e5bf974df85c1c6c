#!/usr/bin/env bash
# The README's demo: start the bundled sandbox on a free loopback port, log in
# with the key it prints, notarize README.md (register -> complete) and print
# the record. Uses a throw-away store, so it never touches your real one.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
sandbox_pid=
cleanup() {
  [ -n "$sandbox_pid" ] && kill "$sandbox_pid" 2>/dev/null && wait "$sandbox_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# Without the caller's own secrets: notarize redacts them from everything it prints, so a
# NOTARIZE_API_KEY equal to NOTARIZE_SANDBOX_API_KEY would print the sandbox's key as [redacted].
env -u NOTARIZE_API_KEY -u NOTARIZE_TOKEN node bin/notarize.js sandbox --port 0 --json >"$work/sandbox.json" 2>"$work/sandbox.log" &
sandbox_pid=$!
for _ in $(seq 1 100); do
  [ -s "$work/sandbox.json" ] && break
  sleep 0.1
done
[ -s "$work/sandbox.json" ] || { echo "demo: the sandbox did not start" >&2; cat "$work/sandbox.log" >&2; exit 1; }

field() { node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").split("\n")[0])[process.argv[2]])' "$work/sandbox.json" "$1"; }
export NOTARIZE_CONFIG_DIR="$work/store"
export NOTARIZE_BASE_URL
NOTARIZE_BASE_URL=$(field url)

echo "\$ notarize login --api-key-stdin   # sandbox at $NOTARIZE_BASE_URL"
field apiKey | node bin/notarize.js login --api-key-stdin
echo
echo '$ notarize register README.md'
node bin/notarize.js register README.md
echo
echo '$ notarize register README.md --json   # again: already in the ledger, nothing sent'
node bin/notarize.js register README.md --json
echo
echo "\$ notarize receipt README.md -o $work/README.md.notarization.json   # a receipt to keep with the document"
node bin/notarize.js receipt README.md -o "$work/README.md.notarization.json"
echo
echo "\$ notarize verify README.md --receipt $work/README.md.notarization.json   # elsewhere: no store, no key, no network"
NOTARIZE_CONFIG_DIR="$work/empty-store" node bin/notarize.js verify README.md --receipt "$work/README.md.notarization.json" >/dev/null
