/**
 * Benchmark 2: hash many files. `notarize hash` over 400 files of 4 MiB
 * against `openssl dgst -sha256` over the same list in one process. Target:
 * ≤ 0.6 × openssl's wall time on 2 cores (notarize hashes in parallel).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { BIN } from './lib/paths.js';
import { removeDir, tempDir, warm, writeRandomFiles } from './lib/files.js';
import { measure } from './lib/proc.js';
import { best, interleave, max, mb, ms } from './lib/stats.js';
import { infoRow, ratioRow } from './lib/table.js';

function digests(file) {
  return [...readFileSync(file, 'utf8').matchAll(/\b([0-9a-f]{64})\b/g)].map((m) => m[1]).join(',');
}

/** CPU time ÷ wall time of the fastest run: how many cores it kept busy (needs GNU time). */
function coresUsed(runs) {
  const fastest = runs.reduce((a, b) => (b.wallMs < a.wallMs ? b : a));
  return fastest.cpuMs === undefined ? 'n/a' : (fastest.cpuMs / fastest.wallMs).toFixed(2);
}

export async function hashMany(ctx) {
  const count = ctx.quick ? 100 : 400;
  const bytes = 4 * 1024 * 1024;
  const dir = tempDir();
  try {
    ctx.log(`hash-many: writing ${count} files of 4 MiB`);
    const paths = writeRandomFiles(join(dir, 'docs'), count, bytes);
    warm(paths);
    const out = (name) => join(dir, `${name}.out`);
    const runs = await interleave(
      [
        {
          name: 'notarize',
          run: () => measure(process.execPath, [BIN, 'hash', ...paths], { stdout: out('notarize') }),
        },
        { name: 'openssl', run: () => measure('openssl', ['dgst', '-sha256', ...paths], { stdout: out('openssl') }) },
      ],
      ctx.rounds,
      (name, r) => ctx.log(`hash-many: ${name} ${ms(r.wallMs)} ${mb(r.peakKB)}`),
    );
    if (digests(out('notarize')) !== digests(out('openssl'))) throw new Error('hash-many: digests differ');
    const wall = (name) => best(runs[name].map((r) => r.wallMs));
    const label = `hash ${count} × 4 MiB`;
    return [
      ratioRow(
        `${label}: wall (best of ${ctx.rounds}, ${availableParallelism()} cores)`,
        ms(wall('notarize')),
        `openssl ${ms(wall('openssl'))}`,
        wall('notarize') / wall('openssl'),
        0.6,
      ),
      infoRow(
        `${label}: cores used (CPU time ÷ wall)`,
        coresUsed(runs.notarize),
        `openssl ${coresUsed(runs.openssl)}`,
        undefined,
      ),
      infoRow(
        `${label}: peak RSS`,
        mb(max(runs.notarize.map((r) => r.peakKB))),
        `openssl ${mb(max(runs.openssl.map((r) => r.peakKB)))}`,
        undefined,
      ),
    ];
  } finally {
    removeDir(dir);
  }
}
