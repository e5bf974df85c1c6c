/**
 * Benchmark 6 (issue 13): aggregate registration. `notarize register
 * --aggregate` registers one Merkle root for all the files: its cost should
 * be hashing plus a few round trips, whatever the number of files.
 *
 * - 1,000 files of 256 bytes, 20 ms of latency injected on every call
 *   (`--faults '*:latency=20'`): against (a) the reference `openssl dgst
 *   -sha256` over the same files + one 20 ms round trip for each of the 3
 *   calls notarize makes (login, request, forfait; test/flow/aggregate.test.ts
 *   asserts there are no others) + `notarize --version` (start-up), all
 *   measured in this run: target ≤ 1.2 ×; for context, the same work written
 *   by hand (bench/reference/minimal-aggregate.js) against that reference; (b) per-document registration of
 *   the same files, 8 in flight, same latency: target ≥ 15 × faster.
 * - Scale: 10,000 and 100,000 files (1,000 and 10,000 with --quick), no
 *   latency: time per file at the largest ≤ 1.25 × at the smaller (linear),
 *   peak RSS < 300 MB. Results as NDJSON (streamed, not held).
 */
import { join } from 'node:path';
import { BIN } from './lib/paths.js';
import { removeDir, tempDir, warm, writeRandomFiles } from './lib/files.js';
import { measure } from './lib/proc.js';
import { runMinimalAggregate, runNotarize, writeList } from './lib/register.js';
import { best, interleave, mb, median, ms } from './lib/stats.js';
import { absoluteRow, infoRow, ratioRow } from './lib/table.js';

const LATENCY_MS = 20;
const LATENCY = `*:latency=${LATENCY_MS}`;
/** login, the request step, forfait. */
const CALLS = 3;

export async function registerAggregate(ctx) {
  return [...(await againstReferences(ctx)), ...(await scale(ctx))];
}

async function againstReferences(ctx) {
  const count = 1000;
  const dir = tempDir();
  try {
    ctx.log(`register-aggregate: writing ${count} files of 256 bytes`);
    const paths = writeRandomFiles(join(dir, 'docs'), count, 256);
    warm(paths);
    const list = writeList(join(dir, 'all.txt'), paths);
    const log = (name, r) => ctx.log(`register-aggregate: ${name} ${ms(r.wallMs)} ${mb(r.peakKB)}`);
    const rounds = Math.min(ctx.rounds, 3);
    const runs = await interleave(
      [
        { name: 'aggregate', run: () => runNotarize(dir, list, count, { args: ['--aggregate'], faults: LATENCY }) },
        { name: 'perDocument', run: () => runNotarize(dir, list, count, { faults: LATENCY }) },
        { name: 'minimal', run: () => runMinimalAggregate(dir, list, count, { faults: LATENCY }) },
        { name: 'openssl', run: () => measure('openssl', ['dgst', '-sha256', ...paths], { memory: false }) },
        { name: 'version', run: () => measure(process.execPath, [BIN, '--version'], { memory: false }) },
      ],
      rounds,
      log,
    );
    const wall = (name) => best(runs[name].map((r) => r.wallMs));
    const reference = wall('openssl') + CALLS * LATENCY_MS + median(runs.version.map((r) => r.wallMs));
    const label = `aggregate ${count.toLocaleString('en')} files, ${LATENCY_MS} ms latency`;
    return [
      ratioRow(
        `${label}: wall vs hashing + round trips + start-up`,
        ms(wall('aggregate')),
        `openssl ${ms(wall('openssl'))} + ${CALLS} × ${LATENCY_MS} ms + --version ${ms(median(runs.version.map((r) => r.wallMs)))} = ${ms(reference)}`,
        wall('aggregate') / reference,
        1.2,
      ),
      ratioRow(
        `${label}: wall vs per-document register (8 in flight)`,
        ms(wall('aggregate')),
        `per document ${ms(wall('perDocument'))}`,
        wall('aggregate') / wall('perDocument'),
        0.0667,
        'target ≤ 0.0667 means ≥ 15 × faster',
      ),
      // Context for the first row: the same work written by hand (bench/reference/minimal-aggregate.js).
      infoRow(
        `${label}: wall vs minimal undici aggregate script`,
        ms(wall('aggregate')),
        `minimal ${ms(wall('minimal'))}`,
        wall('aggregate') / wall('minimal'),
      ),
      infoRow(
        `${label}: minimal undici aggregate script vs hashing + round trips + start-up`,
        ms(wall('minimal')),
        ms(reference),
        wall('minimal') / reference,
        "what Node and undici cost by themselves, against the first row's reference",
      ),
    ];
  } finally {
    removeDir(dir);
  }
}

async function scale(ctx) {
  const sizes = ctx.quick ? [1000, 10_000] : [10_000, 100_000];
  const largest = sizes.at(-1);
  const dir = tempDir();
  try {
    ctx.log(`register-aggregate: writing ${largest.toLocaleString('en')} files of 256 bytes`);
    const paths = writeRandomFiles(join(dir, 'docs'), largest, 256);
    const figures = [];
    for (const size of sizes) {
      const list = writeList(join(dir, `list-${size}.txt`), paths.slice(0, size));
      const r = await runNotarize(dir, list, size, { args: ['--aggregate'] });
      ctx.log(`register-aggregate: ${size} files ${ms(r.wallMs)} ${mb(r.peakKB)}`);
      figures.push({ size, wallMs: r.wallMs, peakKB: r.peakKB });
    }
    const [small, large] = [figures[0], figures.at(-1)];
    const perFile = (f) => f.wallMs / f.size;
    const name = (n) => n.toLocaleString('en');
    return [
      ...figures.map((f) =>
        infoRow(
          `aggregate ${name(f.size)} files: wall, peak RSS`,
          `${ms(f.wallMs)}, ${mb(f.peakKB)}`,
          `${(perFile(f) * 1000).toFixed(0)} µs/file`,
          undefined,
        ),
      ),
      ratioRow(
        `aggregate: time/file at ${name(large.size)} vs ${name(small.size)}`,
        `${(perFile(large) * 1000).toFixed(0)} µs/file`,
        `${(perFile(small) * 1000).toFixed(0)} µs/file`,
        perFile(large) / perFile(small),
        1.25,
        'linear in time',
      ),
      absoluteRow(
        `aggregate ${name(large.size)} files: peak RSS`,
        mb(large.peakKB),
        `${name(small.size)} files: ${mb(small.peakKB)}`,
        large.peakKB / 1024,
        300,
        '< 300 MB',
      ),
    ];
  } finally {
    removeDir(dir);
  }
}
