#!/usr/bin/env python3
"""python3 verify-receipt.py <document> <receipt>: notarize verify --receipt, standard library only.

Verdicts: verified (exit 0); modified, a consistent receipt of another digest, or invalid, a receipt
that contradicts itself (exit 6); exit 2: bad arguments, unreadable files. See docs/verify-by-hand.md:
a receipt is evidence, not a signature; its verificationUrl is where the registration is confirmed."""
import hashlib, json, re, sys

HEX64 = re.compile(r"[0-9a-f]{64}\Z")
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)\Z")
PROOF_KEYS = {"type", "leafSalt", "leafIndex", "treeSize", "path", "root"}
shown = lambda text: "".join(c if c.isprintable() else "\\u%04x" % ord(c) for c in str(text))  # terminal-safe
is_index = lambda value, least: type(value) is int and value >= least
is_hex = lambda value: isinstance(value, str) and HEX64.match(value) is not None

def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as document:
        for block in iter(lambda: document.read(1 << 20), b""): digest.update(block)
    return digest.hexdigest()

def need(ok, why="the receipt is malformed"):
    if not ok: raise ValueError(why)

def fold(fn, size, node, path):  # RFC 9162 section 2.1.3.2: the root a proof of leaf fn leads to, or None
    sn = size - 1
    if fn > sn: return None
    for sibling in path:
        if sn == 0: return None
        if fn % 2 == 1 or fn == sn:
            node = hashlib.sha256(b"\x01" + sibling + node).digest()
            while fn % 2 == 0 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            node = hashlib.sha256(b"\x01" + node + sibling).digest()
        fn, sn = fn >> 1, sn >> 1
    return node if sn == 0 else None

def check_proof(sha256, proof):
    """Raises ValueError unless the proof leads from the document's salted leaf to its root."""
    need(isinstance(proof, dict) and PROOF_KEYS <= set(proof) and isinstance(proof["path"], list), "the receipt is malformed: proof")
    hexes = [proof["leafSalt"], proof["root"]] + proof["path"]
    need(proof["type"] == "rfc9162-sha256-salted-leaf" and len(hexes) <= 66 and all(map(is_hex, hexes))
         and is_index(proof["leafIndex"], 0) and is_index(proof["treeSize"], 1), "the receipt is malformed: proof")
    leaf = hashlib.sha256(b"\x00" + bytes.fromhex(sha256) + bytes.fromhex(proof["leafSalt"])).digest()
    root = fold(proof["leafIndex"], proof["treeSize"], leaf, [bytes.fromhex(h) for h in proof["path"]])
    need(root is not None, "the receipt's proof is no proof for leaf %s of a tree of %s" % (proof["leafIndex"], proof["treeSize"]))
    need(root.hex() == proof["root"], "the receipt's proof does not lead from its document to its root")

def read_receipt(text):
    """(digest, verificationUrl or None) of a consistent receipt; raises ValueError saying why not."""
    try:
        receipt = json.loads(text)
    except ValueError:  # JSONDecodeError is one
        raise ValueError("the receipt is not JSON")
    need(isinstance(receipt, dict), "the receipt is not a JSON object")
    if "type" not in receipt:  # written before v1: the bare record
        need(is_hex(str(receipt.get("hash")).lower()), "the receipt is neither a notarize receipt nor a notarization record")
        return receipt["hash"].lower(), None
    version = receipt.get("version")
    need(receipt["type"] == "notarize-receipt" and version == 1 and not isinstance(version, bool), "the receipt's type or version is not notarize-receipt 1")
    try:
        document, record, service, proof = receipt["document"], receipt["record"], receipt["service"], receipt["proof"]
        sha256, name, size, record_hash = document["sha256"], document["name"], document["size"], record["hash"]
        url, given_url, registered_at = str(service["baseUrl"]).rstrip("/") + "/verification/", service["verificationUrl"], receipt["registeredAt"]
    except (KeyError, TypeError) as missing:
        raise ValueError("the receipt is malformed: %s is missing" % missing)
    need(is_hex(sha256) and (name is None or isinstance(name, str)) and (size is None or is_index(size, 0))
         and isinstance(record, dict) and isinstance(registered_at, str) and ISO_TIME.match(registered_at))
    registered = proof.get("root") if isinstance(proof, dict) else sha256  # the proof's root, else the document
    need(isinstance(record_hash, str) and record_hash.lower() == registered, "the receipt's record is of %s, not of %s" % (record_hash, registered))
    if proof is not None:
        check_proof(sha256, proof)
    need(given_url == url + registered, "the receipt's verificationUrl is not %s" % (url + registered))
    return sha256, given_url

def main(argv):
    if len(argv) != 3:
        print("usage: verify-receipt.py <document> <receipt>", file=sys.stderr)
        return 2
    try:
        digest = sha256_of(argv[1])
        with open(argv[2], "rb") as receipt_file:
            text = receipt_file.read(1 << 20).decode("utf-8", "replace")
        sha256, url = read_receipt(text)
    except OSError as error:
        print("verify-receipt: %s: %s" % (shown(error.filename), shown(error.strerror)), file=sys.stderr)
        return 2
    except ValueError as why:
        print("invalid: %s" % shown(why))
        return 6
    if sha256 != digest:
        print("modified: %s has digest %s; its receipt is of %s" % (shown(argv[1]), digest, sha256))
        return 6
    print("verified: %s matches its receipt" % shown(argv[1]) + ("; the receipt's record can be confirmed at " + shown(url) if url else ""))
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))
