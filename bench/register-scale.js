/**
 * Benchmark 5: scale. Wall time and peak memory of `notarize register` for
 * 100, 1,000 and 10,000 files (fresh store and fresh sandbox each). Time
 * should grow linearly (time per file about constant) and memory stay flat
 * apart from the results held for the final output. The check used: time per
 * file at the largest size ≤ 1.25 × that at 1,000 files.
 */
import { join } from 'node:path';
import { removeDir, tempDir, writeRandomFiles } from './lib/files.js';
import { runNotarize, writeList } from './lib/register.js';
import { best, max, mb, ms } from './lib/stats.js';
import { infoRow, ratioRow } from './lib/table.js';

export async function registerScale(ctx) {
  const sizes = ctx.quick ? [100, 1000] : [100, 1000, 10000];
  const dir = tempDir();
  try {
    const largest = sizes[sizes.length - 1];
    ctx.log(`register-scale: writing ${largest} files of 256 bytes`);
    const paths = writeRandomFiles(join(dir, 'docs'), largest, 256);
    const figures = [];
    for (const size of sizes) {
      const list = writeList(join(dir, `list-${size}.txt`), paths.slice(0, size));
      const rounds = size >= 10000 ? 1 : 2;
      const runs = [];
      for (let i = 0; i < rounds; i++) {
        const r = await runNotarize(dir, list, size);
        ctx.log(`register-scale: ${size} files ${ms(r.wallMs)} ${mb(r.peakKB)}`);
        runs.push(r);
      }
      figures.push({
        size,
        rounds,
        wallMs: best(runs.map((r) => r.wallMs)),
        peakKB: max(runs.map((r) => r.peakKB)),
      });
    }
    const last = figures[figures.length - 1];
    const first = figures[0];
    // Compared with 1,000 files (10,000 vs 1,000 by default; the largest vs the smallest with --quick).
    const base = figures.find((f) => f.size === 1000 && f !== last) ?? first;
    const perFile = (f) => f.wallMs / f.size;
    const rows = figures.map((f) =>
      infoRow(
        `scale ${f.size.toLocaleString('en')} files: wall, peak RSS`,
        `${ms(f.wallMs)}, ${mb(f.peakKB)}`,
        `${perFile(f).toFixed(2)} ms/file`,
        undefined,
      ),
    );
    // Marginal cost: what each file beyond the first `first.size` costs (start-up and login excluded).
    const marginal = (last.wallMs - first.wallMs) / (last.size - first.size);
    rows.push(
      ratioRow(
        `scale: time/file at ${last.size.toLocaleString('en')} vs ${base.size.toLocaleString('en')}`,
        `${perFile(last).toFixed(2)} ms/file`,
        `${perFile(base).toFixed(2)} ms/file`,
        perFile(last) / perFile(base),
        1.25,
        'linear in time',
      ),
      infoRow(
        `scale: marginal time ${first.size}→${last.size.toLocaleString('en')}`,
        `${marginal.toFixed(2)} ms/file`,
        `fixed ≈ ${ms(first.wallMs - marginal * first.size)}`,
        undefined,
      ),
    );
    // Memory should stay flat apart from the results held for the final output.
    const growthKB = (last.peakKB - first.peakKB) / (last.size - first.size);
    rows.push(
      infoRow(
        `scale: memory growth ${first.size}→${last.size.toLocaleString('en')}`,
        `${(growthKB * 1024).toFixed(0)} bytes/file`,
        `${mb(first.peakKB)} → ${mb(last.peakKB)}`,
        undefined,
      ),
    );
    return rows;
  } finally {
    removeDir(dir);
  }
}
