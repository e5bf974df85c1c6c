/**
 * `notarize receipt <file|hash> [-o <file>]`: the v1 receipt
 * (core/receipt-format.ts) of a ledger entry, made after the fact, for a
 * document registered without --receipt-dir or whose receipt was lost.
 */
import type { Command } from 'commander';
import { basename } from 'node:path';
import { z } from 'zod';
import type { Context } from '../context.js';
import { notInLedger, recordOf } from '../core/trees.js';
import { hashOneFile, isDigestNotFile, normalizeHash, writeErrorReason } from '../core/hash.js';
import { receiptText, redactedReceipt, redactedReceiptWarning } from '../core/receipt-format.js';
import { RECEIPT_SUFFIX } from '../core/receipts.js';
import { UsageError } from '../errors.js';
import type { ValueResult } from '../output/present.js';
import { jsonForTerminal } from '../output/safe-text.js';
import { writeFileAtomic } from '../store/files.js';
import { lstatSync } from 'node:fs';
import type { ServiceStore } from '../store/service-store.js';
import { finish, viewWithoutTables } from './action.js';
import { examples, parseOptions } from './options.js';

export const optionsSchema = z.object({ output: z.string().optional() });

/** What `receipt` uses: the digest or file named, where to write, and the ledger. */
export interface ReceiptOptions extends z.infer<typeof optionsSchema> {
  target: string;
  baseUrl: () => string;
  serviceStore: () => ServiceStore;
  /** Printed on a terminal: characters from outside are shown as JSON escapes (safe-text.ts). */
  toTerminal?: boolean;
  /** Removes the run's secrets (IO.redact): from the receipt written with -o too, not only from what is printed. */
  redact: (text: string) => string;
}

export function configure(command: Command, context: () => Context): void {
  command
    .argument('<file|hash>', 'a document, or its SHA-256 digest')
    .option('-o, --output <file>', 'write the receipt to this file instead of standard output')
    .addHelpText(
      'after',
      `
Reads the local ledger only (no network). Exit 6 when the document is not in it.
The receipt holds the document's name, digest and size, the record as the service sent
it (a secret of yours, an API key, a token or a proxy password, redacted should the service
echo one: a warning says so), and where the service shows the registration; \`notarize verify --receipt\` (or anyone,
see docs/verify-by-hand.md) checks a document against it without an account or a store.
-o replaces a regular file named, and refuses a link, device or FIFO there; -o - prints.
Printed on a terminal, characters that would act on it are shown as JSON escapes (same value).
${examples([
  '# CI: a receipt to publish with the release tarball',
  `notarize receipt dist/app.tar.gz -o dist/app.tar.gz${RECEIPT_SUFFIX}`,
  'notarize receipt 905d4f33b218427e8371341674a913db02402f648fef6cdf47c16f65d2dd3001',
])}`,
    )
    .action(async (target: string, raw: unknown) => {
      const ctx = context();
      const flags = parseOptions(optionsSchema, raw, command);
      await finish(
        await viewWithoutTables(ctx),
        await runReceipt({
          ...flags,
          target,
          baseUrl: () => ctx.baseUrl,
          serviceStore: () => ctx.serviceStore,
          toTerminal: ctx.io.stdoutIsTTY,
          redact: (text) => ctx.io.redact(text),
        }),
      );
    });
}

/** The receipt of a digest or of a file's, printed or written (see the module comment). */
export async function runReceipt(options: ReceiptOptions): Promise<ValueResult> {
  const { target } = options;
  const baseUrl = options.baseUrl();
  const file = (await isDigestNotFile(target)) ? undefined : await hashOneFile(target);
  const hash = file?.hash ?? normalizeHash(target);
  // The digest's own record, or the record of the Merkle root it was registered under (register --aggregate).
  const held = await recordOf(options.serviceStore(), hash);
  if (!held) {
    throw await notInLedger(
      options.serviceStore(),
      hash,
      baseUrl,
      'a receipt is made from the ledger that registered it: run this where it was registered, or check --base-url',
    );
  }
  const { entry, underRoot: found } = held;
  const { text, redacted } = redactedReceipt(
    receiptText({
      document: {
        name: file ? basename(target) : ((found ? found.leaf.name : entry.file?.name) ?? null),
        sha256: hash,
        size: file ? file.size : ((found ? found.leaf.size : entry.file?.size) ?? null),
      },
      recordJson: entry.recordJson,
      baseUrl,
      registeredAt: entry.completedAt,
      ...(found ? { proof: found.proof } : {}),
    }),
    hash,
    options.redact,
  );
  // `-o -` is standard output, as for any tool that writes a file.
  if (options.output === undefined || options.output === '-') {
    // On a terminal the record's and the name's characters that would act on it (an escape sequence,
    // U+202E) are shown as JSON escapes: the same JSON value, safe to look at. Redirected, byte for byte.
    return {
      kind: 'value',
      text: { data: options.toTerminal ? jsonForTerminal(text) : text },
      ...(redacted ? { warnings: [redactedReceiptWarning(`the receipt of ${hash}`)] } : {}),
    };
  }
  checkReplaceable(options.output);
  try {
    // A new file renamed over the name: a link there is replaced, never written through.
    await writeFileAtomic(options.output, text, { mode: 0o666, replace: true });
  } catch (error) {
    throw notWritten(options.output, writeErrorReason(error), error);
  }
  return {
    kind: 'value',
    info: [`wrote the receipt of ${hash} to ${options.output}`],
    ...(redacted ? { warnings: [redactedReceiptWarning(`receipt ${options.output}`)] } : {}),
  };
}

/**
 * Refuses an -o target that exists and is not a regular file: a link, a
 * device (`-o /dev/null` as root would replace the system's), a FIFO or a
 * socket would be replaced by the receipt's file, not written to. UsageError
 * (exit 2): nothing was written.
 */
function checkReplaceable(path: string): void {
  let info;
  try {
    info = lstatSync(path);
  } catch {
    return; // None there (or nothing to tell): writeFileAtomic says what goes wrong.
  }
  if (info.isFile()) return;
  const what = info.isSymbolicLink() ? 'a symbolic link' : info.isDirectory() ? 'a directory' : 'not a regular file';
  throw notWritten(path, `it is ${what}, which -o would replace`);
}

/** The error of an -o that cannot be written (exit 2: nothing was written), with what to do. */
function notWritten(path: string, reason: string, cause?: unknown): UsageError {
  return new UsageError(`cannot write the receipt to ${path}: ${reason}`, {
    code: 'receipt_write',
    hint: 'name a new or regular file in a folder you can write in, or -o - for standard output',
    ...(cause === undefined ? {} : { cause }),
  });
}
