// A second reference for benchmark 4 (register-batch): the minimal undici
// script plus, per file, the store operations of notarize's design as it
// stands (docs/reliability.md), done the plainest way. It shows what the
// design costs by itself, apart from how notarize implements it:
//
//   - a lock per hash: a hard link to this run's file in locks/, removed at the end;
//   - the three probes under the lock: ledger/, pending/ and unanswered/<hash>.json;
//   - the session saved before forfait is sent, the record before the session is
//     dropped, each atomically: a temporary file written and fdatasync'ed, renamed
//     into place, its directory fsync'ed;
//   - the pending file removed once the record is saved.
//
// Same wire as minimal-undici.js (log in once, then per file: SHA-256, the
// request step, forfait), same client-side limit (8 in flight).
//
//   node bench/reference/minimal-store.js <base-url> <api-key> <list-file> <store-dir> [concurrency]
//
// Prints the number of files registered.
import { createHash } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { open, readFile, rename, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Agent, request } from 'undici';

const [baseUrl, apiKey, listFile, storeDir, concurrencyArg = '8'] = process.argv.slice(2);
const folder = (name) => join(storeDir, name);
for (const name of ['locks', 'pending', 'ledger', 'unanswered'])
  mkdirSync(folder(name), { recursive: true, mode: 0o700 });
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

async function syncDir(dir) {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

let temporaries = 0;
async function writeAtomic(dir, name, text) {
  const temp = join(dir, `.${name}.${process.pid}.${temporaries++}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await rename(temp, join(dir, name));
  await syncDir(dir);
}

function probe(dir, name) {
  try {
    return readFileSync(join(dir, name), 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

const runFile = join(folder('locks'), `.${process.pid}.run`);
writeFileSync(runFile, `${process.pid}\n`, { mode: 0o600 });
const { token } = JSON.parse(await post('/api/v2/auth/login', JSON.stringify({ apiKey })));
let next = 0;
let done = 0;
async function lane() {
  while (next < files.length) {
    const file = files[next++];
    const hash = createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
    const name = `${hash}.json`;
    const lock = join(folder('locks'), `${hash}.lock`);
    linkSync(runFile, lock);
    try {
      if (probe(folder('ledger'), name) ?? probe(folder('pending'), name) ?? probe(folder('unanswered'), name)) {
        throw new Error(`${hash} is already in the store: start from an empty store`);
      }
      const body = {
        blockchainType: 'ALGORAND',
        custody: false,
        description: basename(file),
        hash,
        signed: false,
        status: 'not_registered',
      };
      const session = await post('/api/v2/registration/?subscription=true', JSON.stringify(body), token);
      await writeAtomic(folder('pending'), name, session);
      const record = await post(`/api/v2/registration/${hash}/forfait`, session, token);
      JSON.parse(record);
      await writeAtomic(folder('ledger'), name, record);
      await unlink(join(folder('pending'), name));
    } finally {
      unlinkSync(lock);
    }
    done++;
  }
}
await Promise.all(Array.from({ length: Number(concurrencyArg) }, lane));
unlinkSync(runFile);
await dispatcher.close();
console.log(done);
