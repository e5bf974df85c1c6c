#!/usr/bin/env node
// Runs the benchmarks of issue 5 and prints one table: benchmark, notarize
// figure, reference figure (measured in the same run), ratio, target, met?
// Run by hand (`npm run bench`, which builds first), never in CI timing.
//
//   node bench/run.js [--quick] [--full] [--rounds N] [--only a,b] [--no-4g] [--markdown] [--json FILE]
//
//   --quick     smaller sizes, for a fast look (not the issue's figures)
//   --full      the 4 GiB case even with --no-4g (disk space allowing), and the shell loop over all 1,000 files
//   --rounds N  rounds of the interleaved comparisons (default 5)
//   --only      some of: hash-large, hash-many, startup, register-batch, register-scale, register-aggregate
//   --no-4g     skip the 4 GiB case of hash-large (it runs when 6 GiB are free in the temp dir)
//   --markdown  print the table in Markdown too (for docs/performance.md)
//   --json FILE write the rows and the machine info as JSON
// Environment: BENCH_FULL=1 (= --full), BENCH_4G=0 (= --no-4g), BENCH_ROUNDS=N,
// BENCH_MEMORY=proc (measure memory by polling /proc even when GNU time exists),
// BENCH_BIN=/other/bin/notarize.js (measure another build of notarize, for A/B comparisons).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { hashLarge } from './hash-large.js';
import { hashMany } from './hash-many.js';
import { removeAll } from './lib/files.js';
import { ROOT } from './lib/paths.js';
import { capture, killAll, MEMORY_METHOD } from './lib/proc.js';
import { markdownTable, textTable } from './lib/table.js';
import { registerAggregate } from './register-aggregate.js';
import { registerBatch } from './register-batch.js';
import { registerScale } from './register-scale.js';
import { startup } from './startup.js';

const BENCHMARKS = {
  'hash-large': { fn: hashLarge, needs: ['openssl', 'sha256sum'] },
  'hash-many': { fn: hashMany, needs: ['openssl'] },
  startup: { fn: startup, needs: [] },
  'register-batch': { fn: registerBatch, needs: ['bash', 'curl', 'sha256sum'] },
  'register-scale': { fn: registerScale, needs: [] },
  'register-aggregate': { fn: registerAggregate, needs: ['openssl'] },
};

const USAGE =
  'usage: node bench/run.js [--quick] [--full] [--rounds N] [--only a,b] [--no-4g] [--markdown] [--json FILE]\n' +
  `  --only: some of ${Object.keys(BENCHMARKS).join(', ')}; see the comment at the top of bench/run.js\n`;

function options() {
  try {
    return parseArgs({
      options: {
        quick: { type: 'boolean', default: false },
        full: { type: 'boolean', default: process.env.BENCH_FULL === '1' },
        rounds: { type: 'string', default: process.env.BENCH_ROUNDS ?? '5' },
        only: { type: 'string' },
        'no-4g': { type: 'boolean', default: process.env.BENCH_4G === '0' },
        markdown: { type: 'boolean', default: false },
        json: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    // A mistyped flag: say which and how to call, not a stack trace.
    process.stderr.write(`bench: ${error.message}\n${USAGE}`);
    process.exit(2);
  }
}

/** A mistake in the command line: its message and the usage, no stack trace. */
function usage(message) {
  return Object.assign(new Error(message), { usage: true });
}

const values = options();
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

// Whatever happens, leave no child process and no temp file behind.
process.on('exit', () => {
  killAll();
  removeAll();
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => process.exit(130));

const log = (message) => process.stderr.write(`  ${message}\n`);

function have(tool) {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function machine() {
  const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  const flags = /^flags\s*:(.*)$/m.exec(cpuinfo)?.[1].split(' ') ?? [];
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    shaExtensions: flags.includes('sha_ni'),
    memoryGiB: Math.round(totalmem() / 1024 ** 3),
    kernel: release(),
    node: process.version,
    nodeOpenssl: process.versions.openssl,
    openssl: (await capture('openssl', ['version'])) || 'not found',
    sha256sum: (await capture('sha256sum', ['--version'])).split('\n')[0] || 'not found',
    curl: (await capture('curl', ['--version'])).split('\n')[0]?.split(' ').slice(0, 2).join(' ') || 'not found',
    tmpdir: tmpdir(),
    memoryMethod: MEMORY_METHOD,
    loadAtStart: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
    date: new Date().toISOString(),
  };
}

function describe(info) {
  return [
    `CPU: ${info.cpu} (${info.cores} cores${info.shaExtensions ? ', SHA extensions' : ''}), ${info.memoryGiB} GiB RAM, Linux ${info.kernel}`,
    `Node ${info.node} (OpenSSL ${info.nodeOpenssl}); ${info.openssl}; ${info.sha256sum}; ${info.curl}`,
    `peak memory: ${info.memoryMethod}; temp dir: ${info.tmpdir}; load average at start: ${info.loadAtStart}${info.loadAtEnd ? `, at end: ${info.loadAtEnd}` : ''}`,
  ].join('\n');
}

async function main() {
  if (!existsSync(new URL('../dist/cli.js', import.meta.url))) {
    throw new Error('dist/ is missing: run `npm run bench` (it builds first) or `npm run build`');
  }
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 3) throw usage('--rounds must be an integer ≥ 3');
  const selected = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(BENCHMARKS);
  for (const name of selected) if (!BENCHMARKS[name]) throw usage(`unknown benchmark '${name}'`);

  const info = await machine();
  process.stderr.write(`${describe(info)}\n`);
  const ctx = {
    quick: values.quick,
    full: values.full,
    rounds,
    skip4g: values.quick || (values['no-4g'] && !values.full),
    log,
  };
  const rows = [];
  let failed = false;
  const started = Date.now();
  for (const name of selected) {
    const { fn, needs } = BENCHMARKS[name];
    const missing = needs.filter((tool) => !have(tool));
    if (missing.length > 0) {
      log(`${name}: skipped, missing ${missing.join(', ')}`);
      continue;
    }
    process.stderr.write(`${name}\n`);
    try {
      rows.push(...(await fn(ctx)));
    } catch (error) {
      failed = true;
      log(`${name} FAILED: ${error.stack ?? error}`);
      rows.push({ benchmark: `${name}: failed`, notarize: 'error', reference: '—', target: '—', met: false });
    }
  }
  info.loadAtEnd = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  info.durationS = Math.round((Date.now() - started) / 1000);
  process.stdout.write(
    `\n${textTable(rows)}\n\n${describe(info)}\nduration: ${info.durationS} s${values.quick ? ' (--quick: reduced sizes)' : ''}\n`,
  );
  if (values.markdown) process.stdout.write(`\n${markdownTable(rows)}\n`);
  if (values.json)
    writeFileSync(values.json, `${JSON.stringify({ machine: info, quick: values.quick, rows }, null, 2)}\n`);
  process.exitCode = failed ? 1 : 0;
}

process.chdir(ROOT);
main().catch((error) => {
  if (error.usage) {
    process.stderr.write(`bench: ${error.message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  process.stderr.write(`bench: ${error.stack ?? error}\n`);
  process.exitCode = 1;
});
