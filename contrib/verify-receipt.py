#!/usr/bin/env python3
"""Check a document against its notarize receipt, with Python 3's standard library only.

    python3 verify-receipt.py <document> <receipt>

Prints one verdict: verified (the document's SHA-256 is the receipt's document.sha256,
exit 0), modified (a consistent receipt of another digest, exit 6), invalid (the receipt
contradicts itself or is none, exit 6); exit 2 for wrong arguments or an unreadable file.
The rules of `notarize verify --receipt` (docs/verify-by-hand.md). A receipt is evidence,
not a signature: it says which digest was registered; its verificationUrl confirms it.
"""
import hashlib, json, re, sys

HEX64 = re.compile(r"[0-9a-f]{64}\Z")
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)\Z")


def shown(text):  # safe for a terminal: control characters escaped
    return "".join(c if c.isprintable() else "\\u%04x" % ord(c) for c in str(text))


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as document:
        for block in iter(lambda: document.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_proof(receipt):  # issue 13 adds the inclusion proofs of aggregate registrations here
    return None if receipt.get("proof", 0) is None else "proof is missing or of a type this verifier does not know"


def read_receipt(text):
    """(digest, verificationUrl or None) of a consistent receipt; raises ValueError saying why not."""
    try:
        receipt = json.loads(text)
    except ValueError:  # JSONDecodeError is one
        raise ValueError("the receipt is not JSON")
    if not isinstance(receipt, dict):
        raise ValueError("the receipt is not a JSON object")
    if "type" not in receipt:  # written before v1: the bare record
        if isinstance(receipt.get("hash"), str) and HEX64.match(receipt["hash"].lower()):
            return receipt["hash"].lower(), None
        raise ValueError("the receipt is neither a notarize receipt nor a notarization record")
    if receipt["type"] != "notarize-receipt":
        raise ValueError("the receipt's type is %s, not \"notarize-receipt\"" % json.dumps(receipt["type"]))
    if receipt.get("version") != 1 or isinstance(receipt.get("version"), bool):
        raise ValueError("unsupported receipt version %s" % json.dumps(receipt.get("version")))
    try:
        document, record, service = receipt["document"], receipt["record"], receipt["service"]
        sha256, record_hash = document["sha256"], record["hash"]
        base_url, url = service["baseUrl"], service["verificationUrl"]
        name, size, registered_at = document["name"], document["size"], receipt["registeredAt"]
    except (KeyError, TypeError) as missing:
        raise ValueError("the receipt is malformed: %s is missing" % missing)
    if not (name is None or isinstance(name, str)) or not (size is None or type(size) is int and size >= 0):
        raise ValueError("the receipt is malformed: document.name or document.size")
    if not isinstance(record, dict) or not (isinstance(registered_at, str) and ISO_TIME.match(registered_at)):
        raise ValueError("the receipt is malformed: record or registeredAt")
    if not (isinstance(sha256, str) and HEX64.match(sha256)):
        raise ValueError("the receipt is malformed: document.sha256 is not 64 lowercase hex digits")
    if not isinstance(record_hash, str) or record_hash.lower() != sha256:
        raise ValueError("the receipt's record is of %s, not of its document's digest %s" % (record_hash, sha256))
    expected = "%s/verification/%s" % (str(base_url).rstrip("/"), sha256)
    if url != expected:
        raise ValueError("the receipt's verificationUrl %s is not %s" % (url, expected))
    problem = check_proof(receipt)
    if problem:
        raise ValueError("the receipt's " + problem)
    return sha256, url


def main(argv):
    if len(argv) != 3:
        print("usage: verify-receipt.py <document> <receipt>", file=sys.stderr)
        return 2
    try:
        digest = sha256_of(argv[1])
        with open(argv[2], "rb") as receipt_file:
            text = receipt_file.read(1 << 20).decode("utf-8", "replace")
    except OSError as error:
        print("verify-receipt: %s: %s" % (shown(error.filename), shown(error.strerror)), file=sys.stderr)
        return 2
    try:
        sha256, url = read_receipt(text)
    except ValueError as why:
        print("invalid: %s" % shown(why))
        return 6
    if sha256 != digest:
        print("modified: %s has digest %s; its receipt is of %s" % (shown(argv[1]), digest, sha256))
        return 6
    where = "; the receipt's record can be confirmed at " + shown(url) if url else ""
    print("verified: %s matches its receipt%s" % (shown(argv[1]), where))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
