// A third reference for benchmark 4 (register-batch): minimal-store.js with
// its per-document durable writes replaced by group commit, the design issue
// 13 names and notarize does not have: every session and record appended to
// one journal file of the run, and the appends that arrive while a flush runs
// made durable together by the next single fdatasync. Each document still
// waits for its session to be durable before forfait is sent and for its
// record before it counts as done; the lock per hash and the probes stay as
// in minimal-store.js. No compaction, no readers of the journal: an upper
// bound on what the redesign could save, not the redesign.
//
//   node bench/reference/minimal-journal.js <base-url> <api-key> <list-file> <store-dir> [concurrency]
//
// Prints the number of files registered.
import { createHash } from 'node:crypto';
import { fdatasync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Agent, request } from 'undici';

const [baseUrl, apiKey, listFile, storeDir, concurrencyArg = '8'] = process.argv.slice(2);
const folder = (name) => join(storeDir, name);
for (const name of ['locks', 'pending', 'ledger', 'unanswered', 'journal'])
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

// The journal: appends go down at once (write(2) to an O_APPEND descriptor);
// a caller is durable once a fdatasync that started after its append ends.
const journal = openSync(join(folder('journal'), `${process.pid}.log`), 'a', 0o600);
let running;
let next;
function flush() {
  const start = () =>
    (running = new Promise((resolve, reject) => fdatasync(journal, (e) => (e ? reject(e) : resolve()))).finally(
      () => (running = undefined),
    ));
  if (!running) return start();
  next ??= running.then(() => {
    next = undefined;
    return start();
  });
  return next;
}
function append(kind, hash, text) {
  writeSync(journal, `${JSON.stringify({ kind, hash, text })}\n`);
  return flush();
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
let nextFile = 0;
let done = 0;
async function lane() {
  while (nextFile < files.length) {
    const file = files[nextFile++];
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
      await append('session', hash, session);
      const record = await post(`/api/v2/registration/${hash}/forfait`, session, token);
      JSON.parse(record);
      await append('record', hash, record);
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
