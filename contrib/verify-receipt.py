#!/usr/bin/env python3
"""python3 verify-receipt.py <document|-> <receipt>: notarize verify --receipt, standard library only (-: standard input).

Verdicts: verified (exit 0); modified, a consistent receipt of another digest, or invalid, a receipt that
contradicts itself (exit 6); exit 2: bad arguments, unreadable files, a receipt over 4 MiB + 64 KiB. See docs/verify-by-hand.md:
a receipt is evidence, not a signature; its verificationUrl is where the registration is confirmed. The rules are
notarize's (src/core/receipt-format.ts), its JSON read as JSON.parse reads it: numbers are doubles (2.0 is 2)."""
import hashlib, json, os, re, stat, sys

MAX_BYTES, MAX_DEPTH, MAX_SAFE = (4 << 20) + (64 << 10), 64, 2**53 - 1  # MAX_RECEIPT_BYTES, MAX_RECEIPT_DEPTH, Number.MAX_SAFE_INTEGER
HEX64, ANY_CASE_HEX64, BASE_URL = re.compile(r"[0-9a-f]{64}\Z"), re.compile(r"[0-9a-fA-F]{64}\Z"), re.compile(r"https?://[A-Za-z0-9._~!$&'()*+,;=:\[\]-]+(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?\Z")  # BASE_URL: settings.ts BASE_URL_PATTERN
# zod's z.iso.datetime({offset: true}): a real date (leap years too), 00:00:00 to 23:59:59, Z or an offset to 23:59; ASCII digits.
ISO_TIME = re.compile(r"(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])"
                      r"-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|02-(?:0[1-9]|1\d|2[0-8])))"
                      r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)\Z", re.ASCII)
DEEP, TWICE = "the receipt nests more than %d levels deep" % MAX_DEPTH, "the receipt has a key twice in one object"
shown = lambda text: "".join(c if c.isprintable() else "\\u%04x" % ord(c) for c in str(text))  # terminal-safe
is_hex = lambda value, pattern=HEX64: isinstance(value, str) and pattern.match(value) is not None
def open_regular(path):  # as notarize opens inputs: non-blocking, and a regular file only (a FIFO or device would hang a read)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if stat.S_ISREG(os.fstat(fd).st_mode): return os.fdopen(fd, "rb")
    os.close(fd); raise OSError(0, "not a regular file", path)
def sha256_of(path):  # "-": standard input, as notarize verify reads it (a pipe, so not open_regular's)
    digest = hashlib.sha256()
    with (os.fdopen(os.dup(0), "rb") if path == "-" else open_regular(path)) as document:
        for block in iter(lambda: document.read(1 << 20), b""): digest.update(block)
    return digest.hexdigest()
def decoded(b):  # notarize's decodeJsonText: UTF-8 (an editor's mark dropped, RFC 8259 8.1), or UTF-16/32 told by a mark or (RFC 4627) four ASCII characters
    units = lambda size, at: len(b) >= 4 * size and all((b[u * size + i] in (9, 10, 13) or 32 <= b[u * size + i] < 127) if i == at else b[u * size + i] == 0 for u in range(4) for i in range(size))
    codec = "utf-32" if b[:4] in (b"\xff\xfe\0\0", b"\0\0\xfe\xff") else "utf-16" if b[:2] in (b"\xff\xfe", b"\xfe\xff") else next((c for size, at, c in ((4, 0, "utf-32-le"), (4, 3, "utf-32-be"), (2, 0, "utf-16-le"), (2, 1, "utf-16-be")) if units(size, at)), None)
    return b.decode(codec, "replace") if codec else b.decode("utf-8", "replace")[b.startswith(b"\xef\xbb\xbf"):]  # a mark of UTF-16/32 dropped by its codec
def need(ok, why="the receipt is malformed"):
    if not ok: raise ValueError(why)
# zod's z.object: an object with all these members, others allowed; z.int(): an integral number from `least` to 2^53-1.
members = lambda value, where, *keys: need(isinstance(value, dict) and all(k in value for k in keys), "the receipt is malformed: " + where) or [value[k] for k in keys]
is_int = lambda value, least=-MAX_SAFE: type(value) is float and value % 1 == 0 and least <= value <= MAX_SAFE
whole = lambda value, least, where: need(is_int(value, least), "the receipt is malformed: " + where) or int(value)
is_record = lambda r: (is_hex(r.get("hash"), ANY_CASE_HEX64) and r.get("status") == "registered" and all(type(r.get(k)) is str for k in ("description", "blockchainType"))
    and all(type(r.get(k)) is bool for k in ("custody", "signed")) and is_int(r.get("creationDate"), 0) and is_int(r.get("userId")) and type(r.get("paymentId")) in (str, type(None)) and type(r.get("tags", [])) is list)
def depth(text):  # how deep arrays and objects nest in JSON text, strings passed over (notarize's jsonDepth)
    level = deepest = 0
    for bracket in re.findall(r"[][{}]", re.sub(r'"[^"\\]*(?:\\.[^"\\]*)*"', "", text)):
        level += 1 if bracket in "[{" else -1; deepest = max(deepest, level)
    return deepest
def fold(fn, size, node, path):  # RFC 9162 section 2.1.3.2: the root a proof of leaf fn leads to, or None
    if fn > (sn := size - 1): return None
    for sibling in path:
        if sn == 0: return None
        if fn % 2 == 1 or fn == sn:
            node = hashlib.sha256(b"\x01" + sibling + node).digest()
            while fn % 2 == 0 and fn != 0: fn, sn = fn >> 1, sn >> 1
        else: node = hashlib.sha256(b"\x01" + node + sibling).digest()
        fn, sn = fn >> 1, sn >> 1
    return node if sn == 0 else None
def read_receipt(text):  # (digest, verificationUrl or None) of a consistent receipt; raises ValueError saying why not
    try:  # every number a double, as JSON.parse reads it (an integer of 5,000 digits too); NaN and Infinity are no JSON
        receipt = json.loads(text, parse_int=float, parse_constant=lambda constant: need(False), object_pairs_hook=lambda items: dict(items) if len(dict(items)) == len(items) else {}["twice"])
    except KeyError: raise ValueError(TWICE)  # readers differ on which of two equal keys they keep: refused, as notarize does
    except RecursionError: raise ValueError(DEEP)  # deeper than Python's parser goes: far deeper than MAX_DEPTH
    except ValueError: raise ValueError("the receipt is not JSON")  # JSONDecodeError is one
    need(depth(text) <= MAX_DEPTH, DEEP)
    need(isinstance(receipt, dict), "the receipt is not a JSON object")
    if "type" not in receipt or "hash" in receipt:  # the bare record (before v1), the service's record of a completed registration (notarizationRecordSchema): a v1 receipt has no "hash", a record may carry a receipt's members
        return need(is_record(receipt), "the receipt is neither a notarize receipt nor a notarization record of a completed registration") or (receipt["hash"].lower(), None)
    need(receipt["type"] == "notarize-receipt" and type(receipt.get("version")) is float and receipt["version"] == 1, "the receipt's type or version is not notarize-receipt 1")
    document, record, service, registered_at, proof = members(receipt, "receipt", "document", "record", "service", "registeredAt", "proof")
    (sha256, name, size), (record_hash,) = members(document, "document", "sha256", "name", "size"), members(record, "record", "hash")
    base_url, given_url = members(service, "service", "baseUrl", "verificationUrl")
    need(is_hex(sha256) and (name is None or isinstance(name, str)) and (size is None or whole(size, 0, "document.size") >= 0), "the receipt is malformed: document")
    need(all(isinstance(v, str) for v in (record_hash, base_url, given_url)), "the receipt is malformed: record.hash, service.baseUrl and service.verificationUrl are strings")
    need(BASE_URL.fullmatch(base_url), "the receipt's service.baseUrl is not an http(s) URL of plain characters without credentials, query or fragment")
    need(isinstance(registered_at, str) and ISO_TIME.match(registered_at), "the receipt is malformed: registeredAt")
    if proof is not None:
        kind, salt, index, tree_size, path, root = members(proof, "proof", "type", "leafSalt", "leafIndex", "treeSize", "path", "root")
        need(kind == "rfc9162-sha256-salted-leaf" and isinstance(path, list) and len(path) <= 64 and all(map(is_hex, [salt, root] + path)),
             "the receipt is malformed: proof")
        index, tree_size = whole(index, 0, "proof.leafIndex"), whole(tree_size, 1, "proof.treeSize")
        folded = fold(index, tree_size, hashlib.sha256(b"\x00" + bytes.fromhex(sha256 + salt)).digest(), [bytes.fromhex(h) for h in path])
    registered = sha256 if proof is None else root  # the proof's root, else the document
    need(record_hash.lower() == registered, "the receipt's record is of %s, not of %s" % (record_hash, registered))
    if proof is not None:
        need(folded is not None, "the receipt's proof is no proof for leaf %d of a tree of %d" % (index, tree_size))
        need(folded.hex() == root, "the receipt's proof does not lead from its document to its root")
    url = (base_url[:-1] if base_url.endswith("/") else base_url) + "/verification/" + registered  # one "/" off, as notarize does
    need(given_url == url, "the receipt's verificationUrl is not %s" % url)
    return sha256, given_url
def main(argv):
    refuse = lambda why: print(shown(why), file=sys.stderr) or 2  # exit 2: nothing was judged
    if len(argv) != 3: return refuse("usage: verify-receipt.py <document|-> <receipt>")
    try:
        where = "standard input" if argv[1] == "-" else argv[1]; digest = sha256_of(argv[1]); where = argv[2]  # what is read
        with open_regular(argv[2]) as receipt_file: text = receipt_file.read(MAX_BYTES + 1)
    except OSError as error: return refuse("verify-receipt: %s: %s" % (error.filename or where, error.strerror))
    if len(text) > MAX_BYTES: return refuse("verify-receipt: the receipt from '%s' is larger than %d bytes" % (argv[2], MAX_BYTES))
    try: sha256, url = read_receipt(decoded(text))
    except ValueError as why: return print("invalid: %s" % shown(why)) or 6
    if sha256 != digest: return print("modified: %s has digest %s; its receipt is of %s" % (shown(argv[1]), digest, sha256)) or 6
    return print("verified: %s matches its receipt" % shown(argv[1]) + ("; the receipt's record can be confirmed at " + shown(url) if url else "")) or 0
if __name__ == "__main__": sys.exit(main(sys.argv))
