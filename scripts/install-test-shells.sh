#!/usr/bin/env bash
# Installs the shells test/cli/completion.test.ts drives (bash, zsh, fish:
# Debian packages of the same names) when any is missing. Its tests fail on a
# machine without them rather than skip, so `npm test` runs this first: the
# README's `npm ci && npm test` then works on a fresh machine with only Node
# and npm (as root or with password-less sudo, as CI runners are).
#
# Quiet and idempotent: does nothing when all three are there; runs
# `apt-get update` only when the package lists cannot provide one of them.
# Exits non-zero when it cannot install them (no apt-get, not root and no
# password-less sudo, a package that cannot be fetched).
set -euo pipefail

# NOTARIZE_SKIP_SHELLS=1: nothing installed, as the completion tests then skip those shells.
[ -n "${NOTARIZE_SKIP_SHELLS:-}" ] && exit 0

shells=(bash zsh fish)
missing=()
for shell in "${shells[@]}"; do
  command -v "$shell" >/dev/null 2>&1 || missing+=("$shell")
done
[ ${#missing[@]} -eq 0 ] && exit 0

fail() {
  echo "install-test-shells: $*; install bash, zsh and fish, then run the tests again (or set NOTARIZE_SKIP_SHELLS=1 to skip the completion tests of missing shells)" >&2
  exit 1
}

command -v apt-get >/dev/null 2>&1 || fail "missing ${missing[*]} and no apt-get to install them"
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  # sudo drops the environment: hand DEBIAN_FRONTEND on explicitly.
  as_root=(sudo -n env DEBIAN_FRONTEND=noninteractive)
else
  fail "missing ${missing[*]}: installing needs root (or password-less sudo)"
fi

export DEBIAN_FRONTEND=noninteractive
# apt's chatter goes to a log, shown only when something fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
quiet_apt_get() {
  "${as_root[@]}" apt-get "$@" >"$log" 2>&1 || {
    cat "$log" >&2
    return 1
  }
}
# The lists know a package when apt-cache shows a candidate version for it.
known() {
  local candidate
  candidate=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ { print $2 }')
  [ -n "$candidate" ] && [ "$candidate" != "(none)" ]
}
install() {
  quiet_apt_get install -y -qq --no-install-recommends "${missing[@]}"
}

updated=
for package in "${missing[@]}"; do
  if ! known "$package"; then
    quiet_apt_get update -qq || fail "apt-get update failed"
    updated=1
    break
  fi
done
if ! install; then
  # Stale lists point at versions the mirror no longer has: refresh once.
  [ -z "$updated" ] || fail "could not install ${missing[*]}"
  quiet_apt_get update -qq || fail "apt-get update failed"
  install || fail "could not install ${missing[*]}"
fi

for shell in "${missing[@]}"; do
  command -v "$shell" >/dev/null 2>&1 || fail "$shell still missing after installing it"
done
echo "install-test-shells: installed ${missing[*]}"
