#!/usr/bin/env bash
# The "shell loop" reference of benchmark 4: what a CI author writes instead
# of notarize. Log in once with curl, then for each file: sha256sum, curl for
# the request step, curl for forfait with the session exactly as received.
#
#   bash bench/reference/shell-loop.sh <base-url> <api-key> <list-file>
#
# Prints one line per file registered.
set -euo pipefail
base_url=$1
api_key=$2
list=$3

token=$(curl -sSf -X POST "$base_url/api/v2/auth/login" \
  -H 'content-type: application/json' -d "{\"apiKey\":\"$api_key\"}" |
  sed -e 's/.*"token":"\([^"]*\)".*/\1/')

while IFS= read -r file; do
  hash=$(sha256sum "$file" | cut -d' ' -f1)
  name=$(basename "$file")
  session=$(curl -sSf -X POST "$base_url/api/v2/registration/?subscription=true" \
    -H "authorization: Bearer $token" -H 'content-type: application/json' \
    -d "{\"blockchainType\":\"ALGORAND\",\"custody\":false,\"description\":\"$name\",\"hash\":\"$hash\",\"signed\":false,\"status\":\"not_registered\"}")
  curl -sSf -X POST "$base_url/api/v2/registration/$hash/forfait" \
    -H "authorization: Bearer $token" -H 'content-type: application/json' \
    -d "$session" >/dev/null
  echo "$hash  $file"
done <"$list"
