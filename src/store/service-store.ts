/**
 * Pending sessions and completed records of one service, one file per hash.
 * The service's answers are kept as the exact text received, so a session is
 * sent back to forfait byte for byte and a record printed as the service sent
 * it, unknown fields included.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, renameSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { NewerStoreFileError, StoreError } from '../errors.js';
import { hashSchema } from '../validation.js';
import {
  corrupt,
  DirFlushes,
  ensurePrivateDir,
  parseStoreText,
  readRegularFile,
  readPrivateFile,
  readStoreFile,
  refusalHint,
  removeFile,
  removeFileOffThread,
  STORE_SCHEMA_VERSION,
  tightenDirIfExists,
  writeFileAtomic,
} from './files.js';

/**
 * The version every pending, retired, ledger and unanswered file starts
 * with. The store alone deals with it: its write path puts it first, its
 * readers refuse any other and hand entries out without it.
 */
const STORE_VERSION = { schemaVersion: STORE_SCHEMA_VERSION } as const;

/**
 * namedHashes lists a folder of up to this many bytes per hash it would
 * otherwise look up: an ext4 folder takes about 116 bytes per file, and
 * listing a file costs about a fifth of looking a hash up in the three
 * folders (2 against 10 µs here), so a listing is the cheaper up to about
 * 5 files per hash.
 */
const LISTING_BYTES_PER_HASH = 512;

const storeVersion = z.literal(STORE_VERSION.schemaVersion);

/** An entry as the store hands it out: its file's content without the version. */
function withoutVersion<T extends { schemaVersion: number }>({ schemaVersion: _version, ...entry }: T) {
  return entry;
}

const fileFacts = z.object({
  name: z.string(),
  size: z.int().nonnegative(),
  // Unix milliseconds, before 1970 too (a file unpacked from an old archive): a record saved with one
  // was read back as damaged, after it was paid for.
  lastModified: z.int(),
});
export type FileFacts = z.infer<typeof fileFacts>;

/** Text that parses as a JSON object: every answer the flow stores is one (see core/notarize.ts). */
const jsonObjectText = z.string().refine((text) => {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}, 'expected the text of a JSON object');

const pendingEntrySchema = z
  .object({
    schemaVersion: storeVersion,
    hash: hashSchema,
    description: z.string(),
    custody: z.boolean(),
    /** What the request step said of `signed` (absent in sessions saved before it was kept). */
    signed: z.boolean().optional(),
    /** With custody: the wallet name to send with the file metadata, as the request's run gave it. */
    walletName: z.string().optional(),
    savedAt: z.string(),
    file: fileFacts.optional(),
    /**
     * Set when forfait was sent with this session and answered 2xx with a body
     * that could not be read: the service may have completed it, so only an
     * explicit `notarize complete` sends the session again.
     */
    forfaitUnreadAt: z.string().optional(),
    /**
     * Set when the session was requested for a hash the ledger already held
     * (`register --force`): that record's completedAt. Only such a session,
     * beside that very record, is a registration asked for again (followsRecord).
     */
    follows: z.string().optional(),
    /** The request step's answer, exactly as received. */
    sessionJson: jsonObjectText,
  })
  .transform(withoutVersion);
export type PendingEntry = z.infer<typeof pendingEntrySchema>;

/**
 * A request step that the service answered 2xx with a body notarize could not
 * read: the service may hold a subscription session for the hash that
 * notarize never saw. Kept so that a re-run does not request again on its own.
 */
const unansweredEntrySchema = z
  .object({
    schemaVersion: storeVersion,
    hash: hashSchema,
    description: z.string(),
    requestedAt: z.string(),
    /**
     * With --custody: what the session would have kept (PendingEntry), so
     * that a completion with the active subscription or a session given by
     * hand still sends the file metadata (absent in marks written before).
     */
    custody: z.boolean().optional(),
    walletName: z.string().optional(),
    file: fileFacts.optional(),
  })
  .transform(withoutVersion);
export type UnansweredEntry = z.infer<typeof unansweredEntrySchema>;

const ledgerEntrySchema = z
  .object({
    schemaVersion: storeVersion,
    hash: hashSchema,
    completedAt: z.string(),
    file: fileFacts.optional(),
    /** The forfait answer, exactly as received. */
    recordJson: jsonObjectText,
    /**
     * Custody metadata owed, as the builds of 2026-11-26 from b57b6c0 to
     * 8e2c3ab's parent kept it (the body as sent), before it moved to
     * custody/<hash>.json: still read, so that a store of theirs sends what
     * it owes (readCustodyOwed), and dropped once taken; never written.
     */
    custodyOwed: jsonObjectText.optional(),
  })
  .transform(withoutVersion);
export type LedgerEntry = z.infer<typeof ledgerEntrySchema>;

/**
 * Custody metadata the service has not yet taken (`PUT /api/v2/file/{hash}`'s
 * body, as it is sent): saved before forfait when the session asked for
 * custody, removed once the service takes it (or refuses it), so that a
 * re-run, `complete <hash>` or `complete --all` sends it (core/notarize.ts).
 */
const custodyOwedSchema = z
  .object({
    schemaVersion: storeVersion,
    hash: hashSchema,
    savedAt: z.string(),
    metadataJson: jsonObjectText,
  })
  .transform(withoutVersion);
export type CustodyOwed = z.infer<typeof custodyOwedSchema>;

/** One document of an aggregate registration's tree: which leaf it is, and what its leaf hash is made of. */
const treeLeafSchema = z.object({
  index: z.int().nonnegative(),
  /** The document's file name (its base name), as `file.name` in the ledger; null when it has none. */
  name: z.string().nullable(),
  sha256: hashSchema,
  size: z.int().nonnegative().nullable(),
  /** The leaf's random salt (core/merkle.ts): leaf = SHA-256(0x00 || sha256 || salt). */
  salt: hashSchema,
});
export type TreeLeaf = z.infer<typeof treeLeafSchema>;

/** What a tree's manifest says it is (core/trees.ts writes it; a tree file may be restored from one). */
export const TREE_MANIFEST = { type: 'notarize-tree', version: 1 } as const;

/**
 * A tree's manifest (`<root>.tree.json`, written beside the receipts: its
 * own type and version instead of the store's) read as the store's tree
 * file, so that a damaged or lost tree file is restored by copying the
 * manifest in. Anything else passes unchanged.
 */
function fromManifest(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || 'schemaVersion' in value) return value;
  const { type, version, ...tree } = value as Record<string, unknown>;
  if (type !== TREE_MANIFEST.type || version !== TREE_MANIFEST.version) return value;
  delete tree.proofType;
  return { schemaVersion: STORE_VERSION.schemaVersion, ...tree };
}

/**
 * The Merkle tree of an aggregate registration (core/aggregate.ts), saved
 * before its root is sent: its leaves in order, enough to give any of its
 * documents its proof. Whether it is registered is the ledger's to say, by
 * a record of `root`; the tree file itself only says what the root is made of.
 */
const treeEntrySchema = z
  .preprocess(
    fromManifest,
    z.object({
      schemaVersion: storeVersion,
      root: hashSchema,
      treeSize: z.int().positive(),
      description: z.string(),
      createdAt: z.string(),
      leaves: z.array(treeLeafSchema),
      /** The SHA-256 of the leaf lines as written (jsonWithRows); absent in a file written without it. */
      leavesSha256: hashSchema.optional(),
    }),
  )
  .refine((tree) => tree.leaves.length === tree.treeSize, 'its treeSize is not its number of leaves')
  .refine((tree) => tree.leaves.every((leaf, i) => leaf.index === i), 'its leaves are not numbered in order')
  .transform(withoutVersion);
export type TreeEntry = z.infer<typeof treeEntrySchema>;

/** Entries that could be read, and the files that could not (named in the errors). */
export interface Listing<T> {
  entries: T[];
  problems: StoreError[];
}

/**
 * The text of `value` as two-space indented JSON, piece by piece, except that
 * the array under `key` (its last field) has one element per line: a file of
 * 100,000 rows is readable and never built as one string. With `digestKey`,
 * a last field of that name holds the SHA-256 of the rows (RowsDigest), so
 * that a reader can tell the rows are as written without parsing them.
 */
export function* jsonWithRows(value: Record<string, unknown>, key: string, digestKey?: string): Generator<string> {
  const head = { ...value };
  const rows = head[key] as readonly unknown[];
  delete head[key];
  if (digestKey !== undefined) delete head[digestKey];
  yield `${JSON.stringify(head, null, 2).slice(0, -2)},\n  ${JSON.stringify(key)}: [\n`; // the head without its "\n}"
  const digest = new RowsDigest();
  for (const [i, row] of rows.entries()) {
    const json = JSON.stringify(row);
    digest.add(json);
    yield `    ${json}${i < rows.length - 1 ? ',' : ''}\n`;
  }
  yield digestKey === undefined ? '  ]\n}\n' : `  ],\n  ${JSON.stringify(digestKey)}: "${digest.hex()}"\n}\n`;
}

/**
 * The SHA-256 of rows as a file's last field records it (jsonWithRows): each
 * row's JSON text followed by a line feed, in order. Written, checked after a
 * parse and checked on a scan of the text, always by this one definition.
 */
class RowsDigest {
  readonly #hash = createHash('sha256');

  add(rowJson: string): void {
    this.#hash.update(`${rowJson}\n`);
  }

  hex(): string {
    return this.#hash.digest('hex');
  }

  static of(rows: readonly unknown[]): string {
    const digest = new RowsDigest();
    for (const row of rows) digest.add(JSON.stringify(row));
    return digest.hex();
  }
}

/** Where a tree file keeps the SHA-256 of its leaf lines. */
export const LEAVES_DIGEST = 'leavesSha256';

/** A leaf line exactly as jsonWithRows writes it: its index and digest are read from it without parsing. */
const LEAF_LINE =
  /^ {4}(\{"index":(\d+),"name":(?:null|"(?:[^"\\]|\\.)*"),"sha256":"([0-9a-f]{64})","size":(?:\d+|null),"salt":"[0-9a-f]{64}"\}),?$/;

/**
 * The leaves' digests of a tree file's text, read without parsing it, when
 * the file is exactly as notarize wrote it: its layout, one well-formed line
 * per leaf numbered in order, as many as its treeSize, and the digest of
 * those lines in its last field. Undefined for anything else (cut short,
 * edited, damaged, written before the digest): then it is parsed in full.
 */
export function leafDigestsOfWholeTree(text: string): string[] | undefined {
  const size = /\n {2}"treeSize": (\d+),\n/.exec(text)?.[1];
  const opening = '\n  "leaves": [\n';
  const start = text.indexOf(opening);
  const end = new RegExp(`\\n {2}\\],\\n {2}"${LEAVES_DIGEST}": "([0-9a-f]{64})"\\n\\}\\n$`).exec(text);
  if (size === undefined || start === -1 || !end) return undefined;
  const lines = text.slice(start + opening.length, end.index).split('\n');
  if (lines.length !== Number(size)) return undefined;
  const digest = new RowsDigest();
  const digests: string[] = [];
  for (const [i, line] of lines.entries()) {
    const match = LEAF_LINE.exec(line);
    if (!match || Number(match[2]) !== i || line.endsWith(',') !== i < lines.length - 1) return undefined;
    digest.add(match[1]!);
    digests.push(match[3]!);
  }
  return digest.hex() === end[1] ? digests : undefined;
}

/**
 * The leaves' digests of the tree file `file` when it is exactly as notarize
 * writes it, read without parsing it; undefined when it does not exist or
 * is anything else. Throws StoreError as readTreeFile does when it cannot
 * be read (a link, not a regular file, or, without `anyOwner`, another's).
 */
export function treeFileDigests(file: string, { anyOwner = false } = {}): string[] | undefined {
  const text = readRegularFile(file, { anyOwner });
  return text === undefined ? undefined : leafDigestsOfWholeTree(text);
}

/**
 * Reads the tree file `file` (a store's `trees/<root>.json`) and checks it
 * is the tree of `root` with the leaves it was written with; undefined when
 * it does not exist. With `wanted`, a file written whole by notarize whose
 * leaves' digests `wanted` turns down is passed over unparsed (undefined):
 * many large trees are searched without building them all. Throws
 * StoreError naming the file when it cannot be read or is damaged.
 */
function readTreeFile(
  file: string,
  root: string,
  wanted?: (digests: readonly string[]) => boolean,
): TreeEntry | undefined {
  const text = readRegularFile(file, {});
  if (text === undefined) return undefined;
  if (wanted) {
    const digests = leafDigestsOfWholeTree(text);
    if (digests && !wanted(digests)) return undefined;
  }
  return treeOfText(file, text, root);
}

/**
 * The tree of `root` in a tree file's text (read from `file`, named in
 * errors): throws StoreError when it is not one, holds another root, or
 * its leaves are not those it was written with.
 */
export function treeOfText(file: string, text: string, root: string): TreeEntry {
  const entry = parseStoreText(file, text, treeEntrySchema);
  if (entry.root !== root) throw corrupt(file, `it holds root ${entry.root}, not ${root}`);
  // Leaves changed since notarize wrote them (a digit, a line) could drop a document from its tree.
  if (entry.leavesSha256 !== undefined && entry.leavesSha256 !== RowsDigest.of(entry.leaves)) {
    throw corrupt(file, `its leaves are not those it was written with (${LEAVES_DIGEST} does not match)`);
  }
  return entry;
}

/**
 * An entry read from `<hash>.json` must be about that hash: a file renamed or
 * edited by hand would otherwise complete or show another hash.
 */
function ofHash<T extends { hash: string }>(hash: string, file: string, entry: T | undefined): T | undefined {
  if (entry !== undefined && entry.hash !== hash) {
    throw corrupt(file, `it holds hash ${entry.hash}, not the ${hash} its name says`);
  }
  return entry;
}

/**
 * The `hash` a record names, lowercase; undefined when it names none. Throws
 * when the text is not a JSON object (a stored record always is).
 */
export function recordHashOf(recordJson: string): string | undefined {
  const record = JSON.parse(recordJson) as { hash?: unknown };
  return typeof record.hash === 'string' ? record.hash.toLowerCase() : undefined;
}

/**
 * The time in the name of a file kept aside (#asideFile): toISOString() with
 * ':' and '.' made '-' (a year beyond 9999 has a sign and six digits).
 */
const ASIDE_TIME = String.raw`(?:\d{4}|[+-]\d{6})-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z`;

/** The on-disk pending sessions and ledger of one service. */
export class ServiceStore {
  readonly dir: string;
  readonly baseUrl: string;
  readonly #warn: (message: string) => void;
  readonly #flushes: DirFlushes;

  /** `flushes`: the Store's, so that its writes share directory flushes; its own by default. */
  constructor(dir: string, baseUrl: string, warn: (message: string) => void = () => {}, flushes = new DirFlushes()) {
    this.dir = dir;
    this.baseUrl = baseUrl;
    this.#warn = warn;
    this.#flushes = flushes;
  }

  pendingFile(hash: string): string {
    return join(this.dir, 'pending', `${hash}.json`);
  }

  /**
   * Where a retired session of `hash` is kept aside: never listed as pending,
   * never sent again, never deleted by notarize. One file per retirement.
   */
  retiredFile(hash: string, at: Date): string {
    return this.#asideFile(this.retiredDir, hash, at);
  }

  ledgerFile(hash: string): string {
    return join(this.dir, 'ledger', `${hash}.json`);
  }

  /**
   * The lock file guarding the flow of one hash (see store/lock.ts), or of
   * another named step (`aggregate`: choosing the trees of a run); its
   * directory is created.
   */
  /** Whether a lock of `hash` is there (held, or left by a process that died), without making the locks folder. */
  hasLock(hash: string): boolean {
    return existsSync(join(this.dir, 'locks', `${hash}.lock`));
  }

  /**
   * The hashes named in the locks, pending and ledger folders, each read in
   * one listing, so that a run about to look up `hashes` hashes there by
   * name looks up only these; undefined when a folder is too large for its
   * listing to be the cheaper (LISTING_BYTES_PER_HASH). A snapshot
   * like the lookups: the folders are read in the reverse of the order a
   * registration leaves them (its lock first, its record last), so one under
   * way when the locks were read is still seen in one of them.
   */
  namedHashes(hashes: number): Set<string> | undefined {
    const named = new Set<string>();
    try {
      for (const folder of ['locks', 'pending', 'ledger']) {
        const dir = join(this.dir, folder);
        const info = lstatSync(dir, { throwIfNoEntry: false });
        if (info === undefined) continue;
        // A link or anything odd is left to the lookups, which say what is wrong with it.
        if (!info.isDirectory() || info.size > hashes * LISTING_BYTES_PER_HASH) return undefined;
        // Temporary files (a leading dot) count too: their hash is on its way in.
        for (const name of readdirSync(dir)) named.add(name.startsWith('.') ? name.slice(1, 65) : name.slice(0, 64));
      }
    } catch {
      return undefined;
    }
    return named;
  }

  lockFile(hash: string): string {
    const dir = join(this.dir, 'locks');
    this.#privateDir(dir);
    return join(dir, `${hash}.lock`);
  }

  /** The pending session for a hash; throws StoreError if its file is damaged. */
  readPending(hash: string): PendingEntry | undefined {
    return ofHash(hash, this.pendingFile(hash), readStoreFile(this.pendingFile(hash), pendingEntrySchema));
  }

  /**
   * Saves a pending session atomically (replacing any earlier one for the
   * hash); resolves once it is durably on disk, rejects if it could not be.
   */
  savePending(entry: PendingEntry): Promise<void> {
    return this.#writeEntry(this.pendingFile(entry.hash), entry);
  }

  /**
   * Moves the pending session of `hash` aside into `retired/`, with when and
   * why, and returns where it went (undefined when none was pending). The
   * copy is durable before the pending file goes, so the session is never lost.
   */
  async retirePending(hash: string, reason: string, at: Date): Promise<string | undefined> {
    let entry: PendingEntry | undefined;
    try {
      entry = this.readPending(hash);
    } catch (error) {
      // A newer notarize's session is not damaged: left where it is, for that version.
      if (!(error instanceof StoreError) || error instanceof NewerStoreFileError) throw error;
      // A damaged file is moved aside as it is, bytes untouched.
      const file = this.retiredFile(hash, at).replace(/\.json$/, '.damaged.json');
      this.#privateDir(join(file, '..'));
      renameSync(this.pendingFile(hash), file);
      return file;
    }
    if (entry === undefined) return undefined;
    const file = this.retiredFile(hash, at);
    await this.#writeEntry(file, { ...entry, retiredAt: at.toISOString(), retiredBecause: reason });
    await this.removePending(hash);
    return file;
  }

  /**
   * Keeps in `retired/` that the service answered 409 for `hash` when there
   * was no session to put aside (a Merkle root's request step), as a
   * retired session's `retiredBecause` would: retirements() reads it back.
   */
  async keepAnswered409(hash: string, reason: string, at: Date): Promise<string> {
    const file = this.retiredFile(hash, at);
    await this.#writeEntry(file, { hash, retiredAt: at.toISOString(), retiredBecause: reason });
    return file;
  }

  /**
   * Why each retired session was put aside (`retiredBecause`), by hash
   * (`only`: of that hash alone). A file that cannot be read is left out:
   * it says nothing either way.
   */
  async retirements(only?: string): Promise<Map<string, string[]>> {
    const reasons = new Map<string, string[]>();
    let names: string[];
    try {
      names = await readdir(this.retiredDir);
    } catch {
      return reasons;
    }
    for (const name of names) {
      if (!/^[0-9a-f]{64}\.[^.]+\.json$/.test(name)) continue; // not .damaged.json, not a temporary file
      if (only !== undefined && !name.startsWith(`${only}.`)) continue; // one hash's: its files alone read
      const hash = name.slice(0, 64);
      try {
        const { retiredBecause } = JSON.parse(readPrivateFile(join(this.retiredDir, name)) ?? '{}') as {
          retiredBecause?: unknown;
        };
        if (typeof retiredBecause === 'string') reasons.set(hash, [...(reasons.get(hash) ?? []), retiredBecause]);
      } catch {
        // Unreadable: no reason known.
      }
    }
    return reasons;
  }

  /** Removes the pending session of a hash; one already gone is not an error. */
  removePending(hash: string): Promise<void> {
    return removeFileOffThread(this.pendingFile(hash));
  }

  /**
   * Removes a pending session left beside the ledger record of its hash by a
   * process stopped between saving the record and removing the session, when
   * that is provable (provablyLeftover); a damaged file, or one that cannot
   * be told (no mark, dated after the record), stays: never sent, for
   * `pending drop` to put aside.
   */
  removeLeftoverPending(record: LedgerEntry): void {
    const pending = this.pendingIfReadable(record.hash);
    if (pending && provablyLeftover(pending, record)) removeFile(this.pendingFile(record.hash));
  }

  /**
   * Whether `pending` is a leftover of a registration the ledger holds (not
   * requested again after it, followsRecord): nothing is sent for it, and the
   * next run that meets it removes it when it can tell (provablyLeftover).
   */
  isLeftover(pending: PendingEntry): boolean {
    const record = this.recordIfReadable(pending.hash);
    return record !== undefined && !followsRecord(pending, record);
  }

  /**
   * The ledger record for a hash; throws StoreError if its file is damaged,
   * including when the record inside is not a record of that hash: an entry
   * is proof of a notarization only if the service's own record names it.
   */
  readRecord(hash: string): LedgerEntry | undefined {
    const file = this.ledgerFile(hash);
    const entry = ofHash(hash, file, readStoreFile(file, ledgerEntrySchema));
    if (entry !== undefined) {
      const named = recordHashOf(entry.recordJson);
      if (named !== hash) throw corrupt(file, `its record is of hash ${named ?? '(none)'}, not ${hash}`);
    }
    return entry;
  }

  /**
   * Keeps aside a forfait answer that is not a record of `hash`, in
   * `quarantine/`, and returns the file: its text, or its bytes (base64)
   * when they were not text to read (a coding not undone). It is never read
   * back by notarize.
   */
  async quarantine(hash: string, answer: string | Buffer, reason: string, at: Date): Promise<string> {
    const file = this.#asideFile(this.quarantineDir, hash, at);
    const kept = typeof answer === 'string' ? { answerText: answer } : { answerBase64: answer.toString('base64') };
    await this.#write(file, { hash, receivedAt: at.toISOString(), reason, ...kept });
    return file;
  }

  /**
   * The answers kept in quarantine/ for `hash`, oldest first (their names
   * after the hash are the time, as #asideFile writes it); none when the
   * folder is absent or cannot be read. Anything else there (a copy, an
   * editor's, a link, a folder) is not named.
   */
  async quarantinedAnswers(hash: string): Promise<string[]> {
    const kept = new RegExp(`^${hash}\\.${ASIDE_TIME}\\.json$`);
    try {
      const entries = await readdir(this.quarantineDir, { withFileTypes: true });
      return entries
        .filter((entry) => entry.isFile() && kept.test(entry.name))
        .map((entry) => entry.name)
        .sort()
        .map((name) => join(this.quarantineDir, name));
    } catch {
      return [];
    }
  }

  /** Saves a completed record atomically; resolves once it is durably on disk, rejects if it could not be. */
  saveRecord(entry: LedgerEntry): Promise<void> {
    return this.#writeEntry(this.ledgerFile(entry.hash), entry);
  }

  /** Where retired sessions are kept aside (retiredFile). */
  get retiredDir(): string {
    return join(this.dir, 'retired');
  }

  /** Where forfait answers that are no record of their hash are kept aside (quarantine). */
  get quarantineDir(): string {
    return join(this.dir, 'quarantine');
  }

  /** Where the trees of --aggregate runs are (one file a root). */
  get treesDir(): string {
    return join(this.dir, 'trees');
  }

  treeFile(root: string): string {
    return join(this.treesDir, `${root}.json`);
  }

  /**
   * The tree whose root is `root`; throws StoreError if its file is damaged
   * (including a tree of another root). That its leaves fold to its root is
   * for the reader to check (core/trees.ts), as the store knows no hashing.
   * With `holding`, a file written whole by notarize that names none of
   * those digests is passed over unparsed (undefined): a store of many large
   * trees is searched without building them all.
   */
  readTree(root: string, holding?: ReadonlySet<string>): TreeEntry | undefined {
    return readTreeFile(
      this.treeFile(root),
      root,
      holding && ((digests) => digests.some((digest) => holding.has(digest))),
    );
  }

  /** Saves a tree atomically, one leaf per line, written line by line (a tree may have 100,000); resolves once durable. */
  async saveTree(entry: TreeEntry): Promise<void> {
    const file = this.treeFile(entry.root);
    this.#privateDir(join(file, '..'));
    await writeFileAtomic(file, jsonWithRows({ ...STORE_VERSION, ...entry }, 'leaves', LEAVES_DIGEST), {
      flushes: this.#flushes,
    });
  }

  /**
   * Removes the tree of `root`: only one planted and never sent, whose
   * root's lock the caller holds (core/aggregate.ts, when another process
   * took up some of its documents meanwhile and it is planted again without
   * them).
   */
  removeTree(root: string): void {
    removeFile(this.treeFile(root));
  }

  /**
   * Every tree, or with `holding` those that may hold one of these digests
   * (see readTree); with `roots`, only the trees of those roots are read.
   */
  listTrees(holding?: ReadonlySet<string>, roots?: ReadonlySet<string>): Promise<Listing<TreeEntry>> {
    return this.#list('trees', (root) => (roots && !roots.has(root) ? undefined : this.readTree(root, holding)));
  }

  /**
   * As listTrees(holding), one tree at a time: `use` sees each that may hold
   * one of these digests and keeps what it needs, so that many large trees
   * are looked through in the memory of one. Resolves with the trees that
   * could not be read.
   */
  async eachTree(holding: ReadonlySet<string>, use: (entry: TreeEntry) => void): Promise<StoreError[]> {
    const listing = await this.#list('trees', (root) => {
      const entry = this.readTree(root, holding);
      if (entry !== undefined) use(entry);
      return undefined;
    });
    return listing.problems;
  }

  unansweredFile(hash: string): string {
    return join(this.dir, 'unanswered', `${hash}.json`);
  }

  /** The unread request step of a hash, if any; throws StoreError if its file is damaged. */
  readUnanswered(hash: string): UnansweredEntry | undefined {
    return ofHash(hash, this.unansweredFile(hash), readStoreFile(this.unansweredFile(hash), unansweredEntrySchema));
  }

  /** Records a request step answered 2xx unreadably (see UnansweredEntry). */
  markUnanswered(entry: UnansweredEntry): Promise<void> {
    return this.#writeEntry(this.unansweredFile(entry.hash), entry);
  }

  /** Forgets an unread request step: it was completed, dropped by hand, or requested again. */
  clearUnanswered(hash: string): void {
    removeFile(this.unansweredFile(hash));
  }

  custodyFile(hash: string): string {
    return join(this.dir, 'custody', `${hash}.json`);
  }

  /** The custody metadata owed for a hash, if any; throws StoreError if its file is damaged. */
  readCustodyOwed(hash: string): CustodyOwed | undefined {
    const owed = ofHash(hash, this.custodyFile(hash), readStoreFile(this.custodyFile(hash), custodyOwedSchema));
    if (owed !== undefined) return owed;
    const legacy = this.recordIfReadable(hash);
    return legacy?.custodyOwed === undefined
      ? undefined
      : { hash, savedAt: legacy.completedAt, metadataJson: legacy.custodyOwed };
  }

  /** The ledger record of `hash`, or undefined when there is none or it is damaged (reported where it is read). */
  recordIfReadable(hash: string): LedgerEntry | undefined {
    return ifReadable(() => this.readRecord(hash));
  }

  /** The pending session of `hash`, or undefined when there is none or it is damaged (reported where it is read). */
  pendingIfReadable(hash: string): PendingEntry | undefined {
    return ifReadable(() => this.readPending(hash));
  }

  /** Saves custody metadata owed (see CustodyOwed); resolves once it is durably on disk. */
  saveCustodyOwed(entry: CustodyOwed): Promise<void> {
    return this.#writeEntry(this.custodyFile(entry.hash), entry);
  }

  /**
   * Forgets custody metadata owed: the service took it, or refused it. An
   * older build's, in the ledger record, goes by writing the record again
   * without it (the record read as it is: the service's text untouched).
   */
  async removeCustodyOwed(hash: string): Promise<void> {
    await removeFileOffThread(this.custodyFile(hash));
    const record = this.recordIfReadable(hash);
    if (record?.custodyOwed === undefined) return;
    const kept: LedgerEntry = { ...record };
    delete kept.custodyOwed;
    await this.saveRecord(kept);
  }

  listCustodyOwed(): Promise<Listing<CustodyOwed>> {
    return this.#list('custody', (hash) => this.readCustodyOwed(hash));
  }

  /**
   * The custody metadata owed by registrations the ledger has (what
   * `complete` sends on its own); that of a hash with no record waits for
   * its session, whose completion sends it.
   */
  async listCustodyOwedOfRecords(): Promise<Listing<CustodyOwed>> {
    const { entries, problems } = await this.listCustodyOwed();
    const recorded = (hash: string) => existsSync(this.ledgerFile(hash));
    return {
      entries: entries.filter((entry) => recorded(entry.hash)),
      problems: problems.filter((problem) => recorded(basename(problem.file, '.json'))),
    };
  }

  listUnanswered(): Promise<Listing<UnansweredEntry>> {
    return this.#list('unanswered', (hash) => this.readUnanswered(hash));
  }

  listPending(): Promise<Listing<PendingEntry>> {
    return this.#list('pending', (hash) => this.readPending(hash));
  }

  listRecords(): Promise<Listing<LedgerEntry>> {
    return this.#list('ledger', (hash) => this.readRecord(hash));
  }

  /**
   * A file kept aside (retired/, quarantine/), one per event: the time in its
   * name, with no ':' (not allowed in Windows file names): `<hash>.<time>.json`,
   * the time as ASIDE_TIME matches it.
   */
  #asideFile(folder: string, hash: string, at: Date): string {
    return join(folder, `${hash}.${at.toISOString().replace(/[:.]/g, '-')}.json`);
  }

  /** Writes an entry with the store's version first. */
  #writeEntry(file: string, entry: object): Promise<void> {
    return this.#write(file, { ...STORE_VERSION, ...entry });
  }

  async #write(file: string, value: unknown): Promise<void> {
    this.#privateDir(join(file, '..'));
    await writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`, { flushes: this.#flushes });
  }

  /** Directories this process has already made private: checked once, not on every write of a batch. */
  readonly #readyDirs = new Set<string>();

  #privateDir(dir: string): void {
    if (this.#readyDirs.has(dir)) return;
    if (ensurePrivateDir(dir)) this.#warn(`tightened the rights of ${dir} to owner-only (0700)`);
    this.#readyDirs.add(dir);
  }

  /**
   * Checks this service's existing directories (made by an older notarize, or
   * by hand): tightens ours, warning for each; refuses a link, another user's
   * or one shared with everyone (see files.ts), before anything is sent.
   */
  tightenExisting(): void {
    for (const dir of [
      join(this.dir, '..'),
      this.dir,
      ...['pending', 'ledger', 'locks', 'retired', 'quarantine', 'unanswered', 'trees', 'custody'].map((d) =>
        join(this.dir, d),
      ),
    ]) {
      if (tightenDirIfExists(dir)) this.#warn(`tightened the rights of ${dir} to owner-only (0700)`);
    }
  }

  async #list<T>(kind: string, read: (hash: string) => T | undefined): Promise<Listing<T>> {
    let names: string[];
    const dir = join(this.dir, kind);
    try {
      names = await readdir(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], problems: [] };
      // Its listing refused (EACCES: the folder's read or search bit; EMFILE: no descriptor): the
      // store's to fix, nothing was sent.
      const hint = refusalHint(error);
      if (hint !== undefined)
        throw new StoreError(dir, `cannot list the store folder ${dir}: ${(error as Error).message}`, {
          hint,
          cause: error,
        });
      throw error;
    }
    const entries: T[] = [];
    const problems: StoreError[] = [];
    // Temporary files of writes in progress start with a dot and are skipped.
    for (const name of names.filter((n) => /^[0-9a-f]{64}\.json$/.test(n)).sort()) {
      try {
        const entry = read(name.slice(0, 64));
        if (entry !== undefined) entries.push(entry);
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        problems.push(error);
      }
    }
    return { entries, problems };
  }
}

/** What `read` gives, or undefined when it throws: a damaged store file, reported where it is read for itself. */
function ifReadable<T>(read: () => T | undefined): T | undefined {
  try {
    return read();
  } catch (error) {
    // Unreadable or damaged (a StoreError); anything else is no answer about the file, and goes on up.
    if (!(error instanceof StoreError)) throw error;
    return undefined;
  }
}

/**
 * Whether `pending` was requested knowing `record` (its `follows` is the
 * record's completedAt): a registration asked for again (`register --force
 * --no-complete`), the one session of a recorded hash `complete` sends. Any
 * other beside a record is that registration's, left over by a process
 * stopped between saving the record and removing the session. Told by a
 * mark, not by comparing times: the session and the record may be written
 * by hosts whose clocks differ (a store shared between containers), and a
 * leftover saved by one an hour ahead passed for a new one and was paid for
 * again.
 */
export function followsRecord(pending: PendingEntry, record: LedgerEntry): boolean {
  return pending.follows !== undefined && pending.follows === record.completedAt;
}

/**
 * Whether `pending`, beside `record`, is provably that registration's
 * leftover, to be removed: it follows an earlier record, or it has no mark
 * and was saved no later than the record was completed. One with no mark
 * dated after the record (a notarize before the mark saved it with `register
 * --force --no-complete`, or a host whose clock is ahead) is not sent, and
 * not removed either: its request may have opened a paid checkout session.
 */
function provablyLeftover(pending: PendingEntry, record: LedgerEntry): boolean {
  if (pending.follows !== undefined) return pending.follows !== record.completedAt;
  const [saved, completed] = [Date.parse(pending.savedAt), Date.parse(record.completedAt)];
  return Number.isFinite(saved) && Number.isFinite(completed) && saved <= completed;
}
