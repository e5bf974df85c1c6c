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
import { expandInputs, itemName } from '../core/inputs.js';
import { InputFileError, UsageError, type NotarizeError } from '../errors.js';
import { forTerminal } from '../output/safe-text.js';
import { addInputOptions, inputOptionsShape, toInputOptions } from './input-options.js';
import { examples, parseOptions } from './options.js';

const optionsSchema = z.object({ ...inputOptionsShape });

export function configure(command: Command, context: () => Context): void {
  addInputOptions(command.argument('[paths...]', "files to hash ('-' reads standard input)"))
    .addHelpText(
      'after',
      `\nPrints "<sha256>  <path>" lines exactly like sha256sum (names with a backslash or a
newline are escaped the same way), so \`sha256sum -c\` can check them. Nothing is sent.
Other characters in names (escape sequences included) are printed as they are, as
sha256sum does: escaping them would break \`sha256sum -c\`. Hash untrusted trees into a file,
or use --json. Messages on stderr are escaped (see the README, "Terminal safety").
An input that cannot be read (missing, unreadable, not a regular file) is reported on
stderr as "notarize: <path>: <reason>" and the others go on; exit 2 if any failed.
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

/**
 * How a failed item is reported on stderr: like sha256sum, `notarize: <path>: <reason>`,
 * on one line whatever the name holds (io.error keeps line feeds, for help and stack traces).
 */
function failureLine(name: string, error: NotarizeError): string {
  return forTerminal(
    error instanceof InputFileError
      ? `notarize: ${error.path}: ${error.reason}`
      : `notarize: ${name}: ${error.message}`,
  );
}

/**
 * Hashes every input, printing lines in input order as soon as they are
 * ready: digests on stdout, and each input that cannot be read on stderr (it
 * does not stop the others), as sha256sum does. Exit 2 if any failed.
 */
export async function runHash(ctx: Context, paths: string[], options: z.infer<typeof optionsSchema>): Promise<void> {
  const expansion = await expandInputs(paths, toInputOptions(options), ctx.io.stdin, (s) =>
    ctx.io.warn(`skipped ${s.path}: ${s.reason}`),
  );
  const pool = new HashPool(expansion.single ? 1 : undefined);
  // Results waiting for an earlier one to be printed (bounded by runAll's window).
  const ready = new Map<number, { name: string; hash?: string; error?: NotarizeError }>();
  const json: { file: string; hash: string }[] = [];
  let printed = 0;
  let failures = 0;
  // One file named alone: its failure is the command's one-line error.
  let singleError: NotarizeError | undefined;
  const flush = () => {
    for (let next = ready.get(printed); next !== undefined; next = ready.get(printed)) {
      ready.delete(printed);
      if (next.hash === undefined) {
        if (expansion.single) singleError = next.error;
        else ctx.io.error(failureLine(next.name, next.error!));
      } else if (ctx.globals.json) json.push({ file: next.name, hash: next.hash });
      else ctx.io.data(checksumLine(next.hash, next.name));
      printed++;
    }
  };
  let total;
  try {
    // Enough in flight to keep every worker busy while lines are printed.
    const concurrency = pool.size * 4;
    total = await runAll(
      expansion.items,
      async (item) => {
        // Start no more while stdout is backed up: lines would pile up in memory.
        await ctx.io.drained();
        if (item.kind === 'unusable') throw item.error;
        // HashPool.hash already hashes in this thread for a pool of one.
        return item.kind === 'stdin' ? await hashStream(ctx.io.stdin) : (await pool.hash(item.path)).hash;
      },
      {
        concurrency,
        window: concurrency * 64,
        onSettled: (index, result, item) => {
          if (result.ok) ready.set(index, { name: itemName(item), hash: result.value });
          else {
            failures++;
            const error = 'error' in result ? result.error : new UsageError('cancelled');
            ready.set(index, { name: itemName(item), error });
          }
          flush();
        },
      },
    );
  } finally {
    await pool.close();
  }
  if (singleError) throw singleError;
  if (ctx.globals.json) ctx.io.dataJsonArray(json);
  if (failures > 0) {
    throw new UsageError(`${failures} of ${total} file${total === 1 ? '' : 's'} could not be read`, {
      code: 'batch_failed',
    });
  }
}
