/**
 * Benchmark 4: batch registration against the sandbox on 127.0.0.1. One
 * `notarize register` call over 1,000 small files, against (a) the shell loop
 * a CI author would write (sha256sum + curl per step; timed over a subset of
 * the files and scaled, because it is slow) and (b) a minimal undici script
 * doing the same 2,000 requests with the same concurrency (8). Targets:
 * ≥ 10 × faster than the shell loop, ≤ 1.3 × the minimal script; and, with
 * 20 ms of latency injected on every call (`--faults '*:latency=20'`), where
 * the wire's limit is 2,000 × 20 ms / 8 = 5.0 s, ≤ 1.05 × the minimal script
 * (issue 13). For context, a third script does what the minimal one does
 * plus the store's per-document writes (bench/reference/minimal-store.js):
 * how much of the gap is the design, how much notarize's code; a fourth
 * (bench/reference/minimal-journal.js) makes the same writes durable by group
 * commit into one journal: how much a store redesign could save at most.
 */
import { join } from 'node:path';
import { removeDir, tempDir, writeRandomFiles } from './lib/files.js';
import {
  runMinimal,
  runMinimalJournal,
  runMinimalStore,
  runNotarize,
  runShellLoop,
  writeList,
} from './lib/register.js';
import { best, interleave, max, mb, ms } from './lib/stats.js';
import { infoRow, ratioRow } from './lib/table.js';

/** The sandbox's fault book for the runs with latency: 20 ms before every answer. */
const LATENCY = '*:latency=20';

export async function registerBatch(ctx) {
  const count = ctx.quick ? 200 : 1000;
  // The shell loop costs ~3 process starts per file: time it over a subset and scale.
  const shellCount = ctx.full ? count : Math.min(count, 100);
  const dir = tempDir();
  try {
    ctx.log(`register-batch: writing ${count} files of 256 bytes`);
    const paths = writeRandomFiles(join(dir, 'docs'), count, 256);
    const list = writeList(join(dir, 'all.txt'), paths);
    const shellList = writeList(join(dir, 'shell.txt'), paths.slice(0, shellCount));
    const log = (name, r) => ctx.log(`register-batch: ${name} ${ms(r.wallMs)} ${mb(r.peakKB)}`);
    const runs = await interleave(
      [
        { name: 'notarize', run: () => runNotarize(dir, list, count) },
        { name: 'minimal', run: () => runMinimal(dir, list, count) },
        { name: 'minimalStore', run: () => runMinimalStore(dir, list, count) },
        { name: 'minimalJournal', run: () => runMinimalJournal(dir, list, count) },
        { name: 'notarizeLatency', run: () => runNotarize(dir, list, count, { faults: LATENCY }) },
        { name: 'minimalLatency', run: () => runMinimal(dir, list, count, { faults: LATENCY }) },
        {
          name: 'shell',
          rounds: ctx.full ? 1 : Math.min(ctx.rounds, 3),
          run: () => runShellLoop(dir, shellList, shellCount),
        },
      ],
      Math.min(ctx.rounds, 3),
      log,
    );
    const wall = (name) => best(runs[name].map((r) => r.wallMs));
    const peak = (name) => max(runs[name].map((r) => r.peakKB));
    const shellScaled = (wall('shell') * count) / shellCount;
    const requests = 2 * count;
    const rps = (name) => `${Math.round(requests / (wall(name) / 1000))} req/s`;
    const label = `register ${count.toLocaleString('en')}`;
    // CPU of the fastest run (GNU time only): on a busy machine, CPU is what bounds the wall time.
    const fastest = (name) => runs[name].reduce((a, b) => (b.wallMs < a.wallMs ? b : a));
    const cpu = (name) => (fastest(name).cpuMs === undefined ? 'n/a' : ms(fastest(name).cpuMs));
    const cpuRatio = () =>
      fastest('notarize').cpuMs === undefined ? undefined : fastest('notarize').cpuMs / fastest('minimal').cpuMs;
    const scaledNote = shellCount === count ? '' : ` (${shellCount} files ×${count / shellCount})`;
    return [
      ratioRow(
        `${label}: wall vs shell loop`,
        ms(wall('notarize')),
        `shell loop ${ms(shellScaled)}${scaledNote}`,
        wall('notarize') / shellScaled,
        0.1,
        'target ≤ 0.10 means ≥ 10 × faster',
      ),
      ratioRow(
        `${label}: wall vs minimal undici (8 in flight)`,
        ms(wall('notarize')),
        `minimal ${ms(wall('minimal'))}`,
        wall('notarize') / wall('minimal'),
        1.3,
      ),
      ratioRow(
        `${label}, 20 ms latency per call: wall vs minimal undici (8 in flight)`,
        ms(wall('notarizeLatency')),
        `minimal ${ms(wall('minimalLatency'))}; the wire's limit ${ms((requests * 20) / 8)}`,
        wall('notarizeLatency') / wall('minimalLatency'),
        1.05,
      ),
      // Context for the row above: the store's design by itself (bench/reference/minimal-store.js).
      infoRow(
        `${label}: wall vs minimal undici + the store's per-document writes`,
        ms(wall('notarize')),
        `minimal with store ${ms(wall('minimalStore'))}`,
        wall('notarize') / wall('minimalStore'),
        'notarize against its design done plainly',
      ),
      infoRow(
        `${label}: minimal undici + the store's per-document writes vs minimal undici`,
        ms(wall('minimalStore')),
        `minimal ${ms(wall('minimal'))}`,
        wall('minimalStore') / wall('minimal'),
        "the design's own cost: 2 fdatasync + 2 directory fsync per document",
      ),
      // What group commit (issue 13's redesign, not built) could save at most: bench/reference/minimal-journal.js.
      infoRow(
        `${label}: minimal undici + group-committed journal vs minimal undici`,
        ms(wall('minimalJournal')),
        `minimal ${ms(wall('minimal'))}`,
        wall('minimalJournal') / wall('minimal'),
        'the same promises with one fdatasync per group of writes: a bound on the redesign',
      ),
      infoRow(`${label}: throughput`, rps('notarize'), `minimal ${rps('minimal')}`, undefined),
      infoRow(`${label}: CPU time (user + system)`, cpu('notarize'), `minimal ${cpu('minimal')}`, cpuRatio()),
      infoRow(
        `${label}: peak RSS`,
        mb(peak('notarize')),
        `minimal ${mb(peak('minimal'))}; shell ${mb(peak('shell'))}`,
        peak('notarize') / peak('minimal'),
      ),
    ];
  } finally {
    removeDir(dir);
  }
}
