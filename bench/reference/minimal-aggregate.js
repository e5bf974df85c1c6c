// The "minimal script" reference of benchmark 6 (register-aggregate): what
// one would write by hand with undici to register one Merkle root for many
// files, and nothing more. Same work on the wire as `notarize register
// --aggregate` (log in, the request step for the root, forfait with the
// session exactly as received) over the same tree (RFC 9162, a random salt
// per leaf: leaf = SHA-256(0x00 ‖ SHA-256(file) ‖ salt), node = SHA-256(0x01
// ‖ left ‖ right)). No store, no receipts, no output per file, no checks
// beyond the status code: it shows what Node and undici cost by themselves,
// beside the floor (openssl + one round trip per call + start-up).
//
//   node bench/reference/minimal-aggregate.js <base-url> <api-key> <list-file>
//
// Prints the number of files under the root.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';

const [baseUrl, apiKey, listFile] = process.argv.slice(2);
const files = readFileSync(listFile, 'utf8').split('\n').filter(Boolean);

const sha256 = (...parts) => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};
const LEAF = Buffer.of(0);
const NODE = Buffer.of(1);
const leaves = files.map((file) => sha256(LEAF, sha256(readFileSync(file)), randomBytes(32)));
// RFC 9162 section 2.1.1: split at the largest power of two below n.
function root(from, to) {
  if (to - from === 1) return leaves[from];
  let k = 1;
  while (k * 2 < to - from) k *= 2;
  return sha256(NODE, root(from, from + k), root(from + k, to));
}
const hash = root(0, leaves.length).toString('hex');

const dispatcher = new Agent({ keepAliveTimeout: 10_000 });
async function post(path, body, token) {
  const headers = { 'content-type': 'application/json', accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const answer = await request(`${baseUrl}${path}`, { method: 'POST', headers, body, dispatcher });
  const text = await answer.body.text();
  if (answer.statusCode !== 200) throw new Error(`${path} answered ${answer.statusCode}: ${text}`);
  return text;
}

const { token } = JSON.parse(await post('/api/v2/auth/login', JSON.stringify({ apiKey })));
const body = {
  blockchainType: 'ALGORAND',
  custody: false,
  description: `Merkle root of ${files.length} documents`,
  hash,
  signed: false,
  status: 'not_registered',
};
const session = await post('/api/v2/registration/?subscription=true', JSON.stringify(body), token);
JSON.parse(await post(`/api/v2/registration/${hash}/forfait`, session, token));
await dispatcher.close();
console.log(files.length);
