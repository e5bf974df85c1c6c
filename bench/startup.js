/**
 * Benchmark 3: start-up. `notarize --version` and `notarize --help` against
 * `node -e 0`, many interleaved runs, median. Target: ≤ 1.5 × bare Node.
 * `register --help` is shown for context: it loads the register command's
 * module (and what it imports) but must not open the store or the network.
 */
import { BIN } from './lib/paths.js';
import { measure } from './lib/proc.js';
import { interleave, median, ms } from './lib/stats.js';
import { infoRow, ratioRow } from './lib/table.js';

export async function startup(ctx) {
  const rounds = ctx.quick ? 10 : 30;
  const node = (args) => () => measure(process.execPath, args, { memory: false });
  const runs = await interleave(
    [
      { name: 'node', run: node(['-e', '0']) },
      { name: 'version', run: node([BIN, '--version']) },
      { name: 'help', run: node([BIN, '--help']) },
      { name: 'registerHelp', run: node([BIN, 'register', '--help']) },
    ],
    rounds,
  );
  const mid = (name) => median(runs[name].map((r) => r.wallMs));
  const base = mid('node');
  ctx.log(
    `startup: node ${ms(base)}, --version ${ms(mid('version'))}, --help ${ms(mid('help'))}, register --help ${ms(mid('registerHelp'))}`,
  );
  const ref = `node -e 0 ${ms(base)}`;
  return [
    ratioRow(`start-up: --version (median of ${rounds})`, ms(mid('version')), ref, mid('version') / base, 1.5),
    ratioRow(`start-up: --help (median of ${rounds})`, ms(mid('help')), ref, mid('help') / base, 1.5),
    infoRow(
      `start-up: register --help (median of ${rounds})`,
      ms(mid('registerHelp')),
      ref,
      mid('registerHelp') / base,
    ),
  ];
}
