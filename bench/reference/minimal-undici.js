// The "minimal script" reference of benchmark 4: what one would write by hand
// with undici to register files, and nothing more. Same work on the wire as
// `notarize register` (log in once, then per file: SHA-256, the request step,
// forfait with the session exactly as received), same client-side limit (8 in
// flight), a keep-alive pool like notarize's. No local ledger, no locks, no
// retries, no validation beyond the status code.
//
//   node bench/reference/minimal-undici.js <base-url> <api-key> <list-file> [concurrency]
//
// Prints the number of files registered.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { Agent, request } from 'undici';

const [baseUrl, apiKey, listFile, concurrencyArg = '8'] = process.argv.slice(2);
const files = (await readFile(listFile, 'utf8')).split('\n').filter(Boolean);
const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 64 });

async function post(path, body, token) {
  const headers = { 'content-type': 'application/json', accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const answer = await request(`${baseUrl}${path}`, { method: 'POST', headers, body, dispatcher });
  const text = await answer.body.text();
  if (answer.statusCode !== 200) throw new Error(`${path} answered ${answer.statusCode}: ${text}`);
  return text;
}

const { token } = JSON.parse(await post('/api/v2/auth/login', JSON.stringify({ apiKey })));
let next = 0;
let done = 0;
async function lane() {
  while (next < files.length) {
    const file = files[next++];
    const hash = createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
    const body = {
      blockchainType: 'ALGORAND',
      custody: false,
      description: basename(file),
      hash,
      signed: false,
      status: 'not_registered',
    };
    const session = await post('/api/v2/registration/?subscription=true', JSON.stringify(body), token);
    JSON.parse(await post(`/api/v2/registration/${hash}/forfait`, session, token));
    done++;
  }
}
await Promise.all(Array.from({ length: Number(concurrencyArg) }, lane));
await dispatcher.close();
console.log(done);
