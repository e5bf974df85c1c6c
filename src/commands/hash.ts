/**
 * `notarize hash <path...>`: SHA-256 digests in the exact format of
 * `sha256sum`, so `sha256sum -c` accepts the output. Nothing is sent.
 */
import type { Command } from 'commander';
import { z } from 'zod';
import type { Context } from '../context.js';
import { runAll } from '../core/batch.js';
import { hashStream } from '../core/hash.js';
import { HashPool } from '../core/hash-pool.js';
import { expandInputs, type InputItem } from '../core/inputs.js';
import { UsageError } from '../errors.js';
import { addInputOptions, inputOptionsShape, toInputOptions } from './input-options.js';
import { examples, parseOptions } from './options.js';

const optionsSchema = z.object({ ...inputOptionsShape });

export function configure(command: Command, context: () => Context): void {
  addInputOptions(command.argument('[paths...]', "files to hash ('-' reads standard input)"))
    .addHelpText(
      'after',
      `\nPrints "<sha256>  <path>" lines exactly like sha256sum (names with a backslash or a
newline are escaped the same way), so \`sha256sum -c\` can check them. Nothing is sent.
With --json: an array of {"file","hash"}.
${examples([
  'notarize hash contract.pdf',
  'notarize hash -r dist > SHA256SUMS && sha256sum -c SHA256SUMS',
  '# CI: record the digests of every artifact next to them',
  'notarize hash -r dist --include "*.tar.gz" > dist/SHA256SUMS',
])}`,
    )
    .action(async (paths: string[], raw: unknown) => {
      await runHash(context(), paths, parseOptions(optionsSchema, raw, command));
    });
}

/** A `sha256sum` line: names with a backslash or newline get GNU's escaping and a leading backslash. */
export function checksumLine(hash: string, name: string): string {
  if (!/[\\\n\r]/.test(name)) return `${hash}  ${name}`;
  const escaped = name.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
  return `\\${hash}  ${escaped}`;
}

/** Hashes every input, printing lines in input order as soon as they are ready. */
export async function runHash(ctx: Context, paths: string[], options: z.infer<typeof optionsSchema>): Promise<void> {
  const { items, skipped } = await expandInputs(paths, toInputOptions(options), ctx.io.stdin);
  for (const s of skipped) ctx.io.warn(`skipped ${s.path}: ${s.reason}`);
  const pool = new HashPool(items.length > 1 ? undefined : 1);
  const name = (item: InputItem) => (item.kind === 'stdin' ? '-' : item.path);
  const ready = new Map<number, string | undefined>();
  const json: { file: string; hash: string }[] = [];
  let printed = 0;
  let failures = 0;
  const flush = () => {
    while (ready.has(printed)) {
      const hash = ready.get(printed);
      ready.delete(printed);
      const item = items[printed]!;
      if (hash !== undefined) {
        if (ctx.globals.json) json.push({ file: name(item), hash });
        else ctx.io.data(checksumLine(hash, name(item)));
      }
      printed++;
    }
  };
  try {
    await runAll(
      items,
      (item) =>
        // HashPool.hash already hashes in this thread for a pool of one.
        item.kind === 'stdin' ? hashStream(ctx.io.stdin) : pool.hash(item.path),
      {
        // Enough in flight to keep every worker busy while lines are printed.
        concurrency: pool.size * 4,
        onSettled: (index, result) => {
          if (result.ok) ready.set(index, result.value);
          else {
            failures++;
            ready.set(index, undefined);
            ctx.io.error(`notarize: ${'error' in result ? result.error.message : 'cancelled'}`);
          }
          flush();
        },
      },
    );
  } finally {
    await pool.close();
  }
  if (ctx.globals.json) ctx.io.dataJsonArray(json);
  if (failures > 0) throw new UsageError(`${failures} of ${items.length} files could not be read`);
}
