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
import { UsageError } from '../errors.js';
import type { IO } from '../output/io.js';
import { checksumsFor, type ChecksumsResult } from '../output/present.js';
import { Checksums, type Checksum } from '../output/results.js';
import { finish, viewWithoutTables } from './action.js';
import { addInputOptions, inputOptionsShape, toInputOptions } from './input-options.js';
import { examples, parseOptions } from './options.js';

export const optionsSchema = z.object({ ...inputOptionsShape });

/** What `hash` uses: the inputs named, and standard input. Nothing else: no store, no network. */
export interface HashOptions extends z.infer<typeof optionsSchema> {
  paths: string[];
  /** Standard input, and warnings as they happen. */
  io: IO;
}

export function configure(command: Command, context: () => Context): void {
  addInputOptions(command.argument('[paths...]', "files to hash ('-' reads standard input)"))
    .addHelpText(
      'after',
      `\nPrints "<sha256>  <path>" lines exactly like sha256sum (names with a backslash or a
newline are escaped the same way), so \`sha256sum -c\` can check them. Nothing is sent.
Other characters in names (escape sequences included) are printed as they are, as
sha256sum does: escaping them would break \`sha256sum -c\`. Hash untrusted trees into a file,
or use --json. Messages on stderr are escaped (see the README, "Terminal safety").
An input that cannot be read (missing, unreadable, not a regular file, a name not in
UTF-8) is reported on stderr as "notarize: <path>: <reason>" and the others go on; exit 2
if any failed.
With --json: an array of {"file","hash"}.
${examples([
  'notarize hash contract.pdf',
  'notarize hash -r dist > SHA256SUMS && sha256sum -c SHA256SUMS',
  '# CI: record the digests of every artifact next to them',
  'notarize hash -r dist --include "*.tar.gz" > SHA256SUMS   # outside dist: a file there would be walked too',
])}`,
    )
    .action(async (paths: string[], raw: unknown) => {
      const ctx = context();
      const flags = parseOptions(optionsSchema, raw, command);
      const view = await viewWithoutTables(ctx);
      await finish(view, await runHash({ ...flags, paths, io: ctx.io }, checksumsFor(view)));
    });
}

/**
 * Hashes every input, handing each checksum to `checksums` in input order as
 * soon as it is ready, so lines are printed as they come; an input that
 * cannot be read does not stop the others, as with sha256sum. The run
 * fails (exit 2) once all are done if any failed; one input named alone is
 * reported the same way, so --json's stdout and error lines keep one shape.
 */
export async function runHash(options: HashOptions, checksums = new Checksums()): Promise<ChecksumsResult> {
  const { io } = options;
  const expansion = await expandInputs(options.paths, toInputOptions(options), io.stdin, (s) =>
    io.warn(`skipped ${s.path}: ${s.reason}`),
  );
  const pool = new HashPool(expansion.single ? 1 : undefined);
  // Checksums waiting for an earlier one to be handed on (bounded by runAll's window).
  const ready = new Map<number, Checksum>();
  let handed = 0;
  let failures = 0;
  const flush = () => {
    for (let next = ready.get(handed); next !== undefined; next = ready.get(handed)) {
      ready.delete(handed);
      checksums.add(next);
      handed++;
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
        await checksums.ready();
        if (item.kind === 'unusable') throw item.error;
        // HashPool.hash already hashes in this thread for a pool of one.
        return item.kind === 'stdin' ? await hashStream(io.stdin) : (await pool.hash(item.path, item.listed)).hash;
      },
      {
        concurrency,
        window: concurrency * 64,
        onSettled: (index, result, item) => {
          const file = itemName(item);
          if (result.ok) ready.set(index, { file, hash: result.value });
          else {
            failures++;
            ready.set(index, { file, error: 'error' in result ? result.error : new UsageError('cancelled') });
          }
          flush();
        },
      },
    );
  } finally {
    await pool.close();
  }
  if (failures === 0) return { kind: 'checksums', checksums };
  const failure = new UsageError(`${failures} of ${total} file${total === 1 ? '' : 's'} could not be read`, {
    code: 'batch_failed',
  });
  return { kind: 'checksums', checksums, failure };
}
