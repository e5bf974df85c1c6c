/**
 * Reading the on-disk store straight from disk, without notarize's own code:
 * where a service's files are, which hashes are pending or in the ledger,
 * the stored tokens, a directory tree with its modes.
 */
import { closeSync, constants, existsSync, fstatSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { serviceDirName } from '../../src/store/store.js';

/** The paths of the on-disk store of the service at `baseUrl` in the store `configDir` (they may not exist yet). */
export function storePaths(configDir: string, baseUrl: string) {
  const service = join(configDir, 'services', serviceDirName(baseUrl));
  return {
    service,
    pendingDir: join(service, 'pending'),
    ledgerDir: join(service, 'ledger'),
    locksDir: join(service, 'locks'),
    retiredDir: join(service, 'retired'),
    /** Whether a session of `hash` was retired (kept aside after a 409 or `pending drop`). */
    retired: (hash: string) => names(join(service, 'retired')).some((n) => n.startsWith(`${hash}.`)),
    pending: (hash: string) => join(service, 'pending', `${hash}.json`),
    ledger: (hash: string) => join(service, 'ledger', `${hash}.json`),
    lock: (hash: string) => join(service, 'locks', `${hash}.lock`),
  };
}

function names(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

/** The hashes with a `<hash>.json` file in `dir` (a pending or ledger directory), sorted; none when it is missing. */
export function hashesIn(dir: string): string[] {
  return names(dir)
    .filter((n) => /^[0-9a-f]{64}\.json$/.test(n))
    .map((n) => n.slice(0, 64));
}

/** Hashes with a pending session file. */
export function pendingHashes(configDir: string, baseUrl: string): string[] {
  return hashesIn(storePaths(configDir, baseUrl).pendingDir);
}

/** Hashes with a ledger file. */
export function ledgerHashes(configDir: string, baseUrl: string): string[] {
  return hashesIn(storePaths(configDir, baseUrl).ledgerDir);
}

/** The tokens stored in `configDir`'s credentials.json, by base URL ({} when there is no readable file). */
export function storedTokens(configDir: string): Record<string, string> {
  let data: unknown;
  try {
    data = JSON.parse(readRegularFile(join(configDir, 'credentials.json')));
  } catch {
    return {}; // no credentials, a file a test damaged on purpose, or a FIFO a test put there
  }
  const tokens = (data as { tokens?: unknown } | null)?.tokens;
  if (typeof tokens !== 'object' || tokens === null) return {};
  return Object.fromEntries(Object.entries(tokens).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/**
 * The text of `path` if it is a regular file; throws otherwise. Opened
 * non-blocking and checked before reading, as notarize reads its own store:
 * a test may put a FIFO where a store file goes, and a blocking read of it
 * would hang the test process for good.
 */
export function readRegularFile(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${path} is not a regular file`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** Every file under `dir`, relative, with its mode, recursively. */
export function listTree(dir: string): { path: string; mode: number; isDir: boolean }[] {
  const out: { path: string; mode: number; isDir: boolean }[] = [];
  const walk = (current: string): void => {
    for (const name of readdirSync(current).sort()) {
      const full = join(current, name);
      const info = statSync(full);
      out.push({ path: relative(dir, full), mode: info.mode & 0o777, isDir: info.isDirectory() });
      if (info.isDirectory()) walk(full);
    }
  };
  walk(dir);
  return out;
}

/** Reads a JSON file straight from disk. */
export function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}
