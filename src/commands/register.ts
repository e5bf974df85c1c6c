/**
 * `notarize register <file|->`: hash locally, request the registration, save
 * the session, complete it. The logic is in core/notarize.ts.
 */
import { Option, type Command } from 'commander';
import { basename } from 'node:path';
import { z } from 'zod';
import { BLOCKCHAIN_TYPES } from '../api/schemas.js';
import type { Context } from '../context.js';
import { hashFile, hashStream, normalizeHash, statInput } from '../core/hash.js';
import { register, type RegisterInput } from '../core/notarize.js';
import { UsageError } from '../errors.js';
import { showOutcome } from '../output/outcome.js';
import type { FileFacts } from '../store/service-store.js';
import { examples, parseOptions } from './options.js';

const optionsSchema = z.object({
  hash: z.string().optional(),
  description: z.string().optional(),
  custody: z.boolean().default(false),
  signed: z.boolean().default(false),
  blockchain: z.enum(BLOCKCHAIN_TYPES).default('ALGORAND'),
  complete: z.boolean().default(true),
  force: z.boolean().default(false),
  walletName: z.string().optional(),
});
export type RegisterOptions = z.infer<typeof optionsSchema>;

export function configure(command: Command, context: () => Context): void {
  command
    .argument('[file]', "the document to notarize ('-' reads standard input)")
    .option('--hash <hex>', 'register a precomputed SHA-256 digest instead of a file')
    .option('-d, --description <text>', "description sent with the hash (default: the file's name)")
    .option('--custody', 'ask the service to keep the file (metadata only: see below)')
    .option('--signed', 'mark the document as signed')
    .addOption(
      new Option('--blockchain <type>', 'blockchain to anchor on').choices(BLOCKCHAIN_TYPES).default('ALGORAND'),
    )
    .option('--no-complete', 'stop after saving the session; finish later with `notarize complete`')
    .option('--force', 'register again even if the ledger already has this hash')
    .option('--wallet-name <name>', 'with --custody: the wallet name sent with the file metadata')
    .addHelpText(
      'after',
      `\nOnly the SHA-256 digest leaves this machine. The session the service returns is saved
before anything else, so an interrupted run is finished with \`notarize complete <hash>\`.
Re-running is safe: a hash already in the ledger is printed, not registered again.

--custody sends the file's metadata (name, type, size, last modified). The service does
not document how file bytes are uploaded, so notarize does NOT upload the file.
${examples([
  'notarize register contract.pdf',
  'notarize register contract.pdf --json > record.json',
  "cat report.pdf | notarize register - -d 'Q3 report'",
  "notarize register --hash 905d4f33...3001 -d 'built elsewhere'",
  '# CI: register at build, complete in a later job',
  'NOTARIZE_API_KEY=$KEY notarize register dist/app.tar.gz --no-complete --quiet',
])}`,
    )
    .action(async (file: string | undefined, raw: unknown) => {
      await runRegister(context(), file, parseOptions(optionsSchema, raw));
    });
}

/** Resolves what to register: a digest and, for a file, its name, size and mtime. */
async function resolveInput(ctx: Context, file: string | undefined, options: RegisterOptions) {
  if (options.hash !== undefined) {
    if (file !== undefined) throw new UsageError('give either a file or --hash, not both');
    if (options.description === undefined) throw new UsageError('--hash needs --description');
    return { hash: normalizeHash(options.hash), description: options.description, file: undefined };
  }
  if (file === undefined)
    throw new UsageError('missing the file to register', { hint: "give a path, '-' for standard input, or --hash" });
  if (file === '-') {
    if (options.description === undefined) throw new UsageError("reading standard input ('-') needs --description");
    if (ctx.io.stdinIsTTY)
      throw new UsageError("'-' reads standard input, but it is a terminal", { hint: 'pipe the document in' });
    return { hash: await hashStream(ctx.io.stdin), description: options.description, file: undefined };
  }
  const info = await statInput(file);
  const facts: FileFacts = { name: basename(file), size: info.size, lastModified: info.lastModified };
  return { hash: await hashFile(file), description: options.description ?? facts.name, file: facts };
}

/** Runs `register`; throws NotarizeError subclasses for main() to map. */
export async function runRegister(ctx: Context, file: string | undefined, options: RegisterOptions): Promise<void> {
  if (options.custody && (options.hash !== undefined || file === '-')) {
    throw new UsageError('--custody needs a file path (its metadata is sent), not --hash or standard input');
  }
  const baseUrl = ctx.baseUrl; // validated before anything is read or sent
  const spinner = ctx.io.spinner('hashing');
  try {
    const target = await resolveInput(ctx, file, options);
    const input: RegisterInput = {
      hash: target.hash,
      description: target.description,
      custody: options.custody,
      signed: options.signed,
      blockchain: options.blockchain,
      complete: options.complete,
      force: options.force,
      ...(target.file ? { file: target.file } : {}),
      ...(options.walletName === undefined ? {} : { walletName: options.walletName }),
    };
    const outcome = await register(
      { api: await ctx.api(), store: ctx.ledger, onStep: (step) => spinner.update(step) },
      input,
    );
    spinner.stop();
    showOutcome(ctx.io, outcome, { json: ctx.globals.json ?? false, baseUrl });
    if (outcome.kind === 'completed' && outcome.custody?.error) throw outcome.custody.error;
  } finally {
    spinner.stop();
  }
}
