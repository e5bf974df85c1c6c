/**
 * A record the service sent with numbers JSON.parse cannot hold (a uint64
 * above 2^53, `1.50`, `1E400`) or with a key twice is printed exactly as
 * sent by every command that prints records as JSON: one document's
 * `--json`, a batch's `--json` array and NDJSON lines, and `list --json`
 * (src/exact-json.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeRun } from '../helpers/cli.js';
import { useBed, type Bed } from '../helpers/bed.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

/** What the service added to the record: none of it survives JSON.parse and JSON.stringify. */
const EXTRA = '"assetId2":12345678901234567890123,"fee":1.50,"e":1E400,"dup":1,"dup":2';

describe('records printed exactly as the service sent them', () => {
  it('register of one and of several, --json and NDJSON, and list --json', async () => {
    const a = await bed.write('exact/a.txt', 'exact a\n');
    const b = await bed.write('exact/b.txt', 'exact b\n');
    const first = await bed.main(['register', bed.path('exact/a.txt'), bed.path('exact/b.txt'), '--json']);
    expect(first.code, describeRun(first)).toBe(0);
    // The ledger keeps the answer as it came: make it one that carries such numbers.
    const records = new Map<string, string>();
    for (const hash of [a, b]) {
      const file = bed.ledgerFile(hash);
      const entry = JSON.parse(readFileSync(file, 'utf8')) as { recordJson: string };
      entry.recordJson = entry.recordJson.replace(/^\{/, `{${EXTRA},`);
      records.set(hash, entry.recordJson);
      writeFileSync(file, JSON.stringify(entry));
    }
    const mark = bed.mark();
    const one = await bed.main(['register', bed.path('exact/a.txt'), '--json']);
    expect(one.stdout.trim()).toBe(records.get(a));
    const ndjson = await bed.main(['register', bed.path('exact/a.txt'), bed.path('exact/b.txt'), '--output', 'ndjson']);
    expect(ndjson.code, describeRun(ndjson)).toBe(0);
    const lines = ndjson.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const [i, hash] of [a, b].entries()) {
      expect(lines[i]).toContain(`"hash":"${hash}","status":"already-registered","record":${records.get(hash)},`);
    }
    const array = await bed.main(['register', bed.path('exact/a.txt'), bed.path('exact/b.txt'), '--json']);
    expect(array.stdout).toContain('"assetId2": 12345678901234567890123,\n      "fee": 1.50,\n      "e": 1E400,');
    expect(array.stdout).toContain('"dup": 1,\n      "dup": 2,');
    const list = await bed.main(['list', '--json']);
    expect(list.stdout.match(/"assetId2": 12345678901234567890123,/g)).toHaveLength(2);
    expect(bed.callsSince(mark)).toEqual([]);
  });
});
