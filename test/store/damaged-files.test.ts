/**
 * A damaged store file, the common cases through a bed: a clear error naming
 * the file, exit 2, nothing sent, and the file's bytes unchanged. Every kind
 * of damage against every file is in corruption.test.ts.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectFailure, expectJsonError } from '../helpers/assert.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { routes } from '../helpers/sandbox.js';
import { sha256 } from '../helpers/documents.js';

let bed: Bed;
useBed((created) => (bed = created));

/** Writes `bytes` at `path` (directories created 0700, file 0600). */
function plant(path: string, bytes: string): Buffer {
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  writeFileSync(path, bytes, { mode: 0o600 });
  return readFileSync(path);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('a corrupt store file', () => {
  const doc = 'the document';
  const cases = [
    { name: 'credentials.json, not JSON', file: () => bed.credentialsFile, bytes: '{"tokens": {"http://x": "ey' },
    { name: "credentials.json, 'tokens' not an object", file: () => bed.credentialsFile, bytes: '{"tokens": "oops"}' },
    { name: 'config.json, not JSON', file: () => join(bed.storeDir, 'config.json'), bytes: '{baseUrl: nope}' },
    {
      name: 'a ledger entry, not JSON',
      file: () => join(bed.serviceDir(), 'ledger', `${sha256(doc)}.json`),
      bytes: '\u0000\u0001garbage',
    },
    {
      name: 'a ledger entry of the wrong shape',
      file: () => join(bed.serviceDir(), 'ledger', `${sha256(doc)}.json`),
      bytes: '{"schemaVersion": 1, "hash": "nope"}',
    },
    {
      name: 'a pending entry, not JSON',
      file: () => join(bed.serviceDir(), 'pending', `${sha256(doc)}.json`),
      bytes: '{"schemaVersion":1,',
    },
  ];

  it.each(cases)('register: $name', async ({ file, bytes }) => {
    const path = file();
    const before = plant(path, bytes);
    const target = await bed.file('doc.txt', doc);
    const result = await bed.main(['register', target], { env: bed.withKey() });
    expectFailure(result, 2, new RegExp(`store file ${escape(path)} is damaged`));
    expect(result.stderr).toMatch(/untouched/);
    expect(bed.sandbox.calls).toEqual([]);
    expect(readFileSync(path)).toEqual(before);

    const json = await bed.main(['register', target, '--json'], { env: bed.withKey() });
    const error = expectJsonError(json, 2);
    expect(error.code).toBe('store');
    expect(error.message).toContain(path);
    expect(readFileSync(path)).toEqual(before);
  });

  it('config list and config set name a damaged config.json and leave it alone', async () => {
    const path = join(bed.storeDir, 'config.json');
    const before = plant(path, '{"baseUrl": ');
    const list = await bed.main(['config', 'list'], { env: { NOTARIZE_BASE_URL: undefined }, noBaseUrlCheck: true });
    expectFailure(list, 2, new RegExp(escape(path)));
    const set = await bed.main(['config', 'set', 'baseUrl', bed.sandbox.url]);
    expectFailure(set, 2, new RegExp(escape(path)));
    expect(readFileSync(path)).toEqual(before);
  });

  it('pending warns about a damaged entry, names it, lists the others, and exits 2 (not the whole list)', async () => {
    const good = await bed.file('good.txt', 'good');
    const saved = await bed.main(['register', good, '--no-complete'], { env: bed.withKey() });
    expect(saved.code, saved.stderr).toBe(0);
    const path = join(bed.serviceDir(), 'pending', `${sha256('bad')}.json`);
    const before = plant(path, 'not json');
    const result = await bed.main(['pending']);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/a pending file could not be read: the list leaves it out/);
    expect(result.stdout).toContain(sha256('good'));
    expect(result.stdout).not.toContain(sha256('bad'));
    expect(result.stderr).toMatch(new RegExp(`warning: store file ${escape(path)} is damaged`));
    expect(readFileSync(path)).toEqual(before);
  });

  it('login with a damaged credentials file fails before sending the key', async () => {
    // Exit 2 says nothing was sent: the store is opened before the key is exchanged, or the token would be lost.
    const before = plant(bed.credentialsFile, '{"tokens":');
    const result = await bed.main(['login', '--api-key-stdin'], { input: bed.sandbox.apiKey });
    expectFailure(result, 2, new RegExp(`store file ${escape(bed.credentialsFile)} is damaged`));
    expect(readFileSync(bed.credentialsFile)).toEqual(before);
    expect(routes(bed.sandbox.calls)).toEqual([]);
  });
});
