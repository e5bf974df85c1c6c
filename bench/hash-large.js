/**
 * Benchmark 1: hash one large file. `notarize hash big.bin` against
 * `openssl dgst -sha256 big.bin` and `sha256sum big.bin`, warm page cache,
 * best of N interleaved rounds. Target: wall ≤ 1.05 × openssl; peak memory
 * ≤ 100 MB, for 1 GiB and (when the disk allows) 4 GiB.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN } from './lib/paths.js';
import { freeBytes, removeDir, tempDir, warm, writeRandomFile } from './lib/files.js';
import { measure } from './lib/proc.js';
import { best, interleave, max, mb, ms } from './lib/stats.js';
import { absoluteRow, infoRow, ratioRow } from './lib/table.js';

const GiB = 1024 ** 3;
const MEMORY_LIMIT_KB = 100e6 / 1024; // 100 MB, in the KiB that GNU time and VmHWM report

function digestOf(file) {
  return /\b([0-9a-f]{64})\b/.exec(readFileSync(file, 'utf8'))?.[1];
}

async function one(ctx, bytes, rounds, withSha256sum) {
  const dir = tempDir();
  try {
    const big = join(dir, 'big.bin');
    const label = bytes >= GiB ? `${bytes / GiB} GiB` : `${bytes / 1024 ** 2} MiB`;
    ctx.log(`hash-large: writing ${label} of random data`);
    writeRandomFile(big, bytes);
    warm([big]);
    const out = (name) => join(dir, `${name}.out`);
    const contenders = [
      { name: 'notarize', run: () => measure(process.execPath, [BIN, 'hash', big], { stdout: out('notarize') }) },
      { name: 'openssl', run: () => measure('openssl', ['dgst', '-sha256', big], { stdout: out('openssl') }) },
    ];
    // sha256sum (no SHA extensions in coreutils here) is several times slower: 3 rounds are plenty.
    if (withSha256sum) {
      contenders.push({
        name: 'sha256sum',
        rounds: Math.min(rounds, 3),
        run: () => measure('sha256sum', [big], { stdout: out('sha256sum') }),
      });
    }
    const runs = await interleave(contenders, rounds, (name, r) =>
      ctx.log(`hash-large ${label}: ${name} ${ms(r.wallMs)} ${mb(r.peakKB)}`),
    );
    const expected = digestOf(out('openssl'));
    for (const name of Object.keys(runs)) {
      if (digestOf(out(name)) !== expected) throw new Error(`hash-large: ${name} printed a different digest`);
    }
    const wall = (name) => best(runs[name].map((r) => r.wallMs));
    const peak = (name) => max(runs[name].map((r) => r.peakKB));
    const rows = [
      ratioRow(
        `hash ${label}: wall (best of ${rounds})`,
        ms(wall('notarize')),
        `openssl ${ms(wall('openssl'))}`,
        wall('notarize') / wall('openssl'),
        1.05,
      ),
    ];
    if (withSha256sum) {
      rows.push(
        infoRow(
          `hash ${label}: wall vs sha256sum`,
          ms(wall('notarize')),
          `sha256sum ${ms(wall('sha256sum'))}`,
          wall('notarize') / wall('sha256sum'),
        ),
      );
    }
    rows.push(
      absoluteRow(
        `hash ${label}: peak RSS`,
        mb(peak('notarize')),
        `openssl ${mb(peak('openssl'))}`,
        peak('notarize'),
        MEMORY_LIMIT_KB,
        '≤ 100 MB',
      ),
    );
    return rows;
  } finally {
    removeDir(dir);
  }
}

export async function hashLarge(ctx) {
  const size = ctx.quick ? 256 * 1024 ** 2 : GiB;
  const rows = await one(ctx, size, ctx.rounds, true);
  const needed = 4 * GiB + 2 * GiB; // the file, and room to spare
  if (ctx.skip4g) {
    ctx.log('hash-large: 4 GiB case skipped (--quick or BENCH_4G=0)');
  } else if (freeBytes() < needed) {
    ctx.log(`hash-large: 4 GiB case skipped: ${(freeBytes() / GiB).toFixed(1)} GiB free in the temp dir`);
  } else {
    rows.push(...(await one(ctx, 4 * GiB, Math.min(ctx.rounds, 3), false)));
  }
  return rows;
}
