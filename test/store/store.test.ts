import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keyDigest, keyTrace } from '../../src/secrets.js';
import { StoreError, UsageError } from '../../src/errors.js';
import { defaultStoreDir, serviceDirName, Store } from '../../src/store/store.js';
import { rejection, thrown } from '../helpers/catch.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const SANDBOX = 'http://127.0.0.1:8080';
const REAL = 'https://app.dedit.io';

const mode = (path: string) => statSync(path).mode & 0o777;
const posix = process.platform !== 'win32';

describe('Store directory', () => {
  const tempDir = useTempDirs();

  /** A store whose warnings (passed to its warn callback) are collected. */
  function warnedStore(dir: string): { store: Store; warnings: string[] } {
    const warnings: string[] = [];
    return { store: new Store(dir, (message) => warnings.push(message)), warnings };
  }

  it.runIf(posix)('creates a missing store directory (and parents) with mode 0700, without a warning', () => {
    const dir = join(tempDir(), 'a', 'notarize');
    const { store, warnings } = warnedStore(dir);
    store.prepare();
    expect(mode(dir)).toBe(0o700);
    expect(warnings).toEqual([]);
  });

  it.runIf(posix)('tightens an existing 0755 directory to 0700 and warns about it', () => {
    const dir = join(tempDir(), 'notarize');
    mkdirSync(dir);
    chmodSync(dir, 0o755);
    const { store, warnings } = warnedStore(dir);
    store.prepare();
    expect(mode(dir)).toBe(0o700);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(dir);
    expect(warnings[0]).toContain('0700');
  });

  it.runIf(posix)('warns only once however often it is prepared', async () => {
    const dir = join(tempDir(), 'notarize');
    mkdirSync(dir);
    chmodSync(dir, 0o775);
    const { store, warnings } = warnedStore(dir);
    store.prepare();
    store.service(REAL);
    await store.setToken(REAL, 'token-value-1234', { digest: 'key-digest-0123', prints: [] });
    expect(warnings).toHaveLength(1);
  });

  it.runIf(posix)('does not warn about a directory already private', async () => {
    const dir = join(tempDir(), 'notarize');
    mkdirSync(dir, { mode: 0o700 });
    const { store, warnings } = warnedStore(dir);
    await store.setToken(REAL, 'token-value-1234', { digest: 'key-digest-0123', prints: [] });
    expect(warnings).toEqual([]);
  });

  it('creates nothing until it is used', () => {
    const dir = join(tempDir(), 'lazy');
    new Store(dir);
    expect(existsSync(dir)).toBe(false);
  });
});

describe('Store tokens', () => {
  it("keeps a key's trace with its token, and never takes another login's prints for this key's", async () => {
    const dir = join(tempDir(), 'notarize');
    const store = new Store(dir);
    const trace = keyTrace('sk_live_first_key_0123');
    await store.setToken(REAL, 'token-value-1234', trace);
    expect(store.storedSecrets().keys).toEqual([trace]);
    expect(readFileSync(join(dir, 'credentials.json'), 'utf8')).not.toContain('sk_live_first_key_0123');
    // An older notarize logs in with another key: it rewrites tokenKeys alone.
    const file = join(dir, 'credentials.json');
    const data = JSON.parse(readFileSync(file, 'utf8')) as { tokenKeys: Record<string, string> };
    data.tokenKeys[REAL] = keyDigest('sk_live_second_key_4567');
    writeFileSync(file, JSON.stringify(data));
    expect(new Store(dir).storedSecrets().keys).toEqual([{ digest: keyDigest('sk_live_second_key_4567'), prints: [] }]);
    // Prints that are no map (damaged): the key is still known by its digest, and a login writes them anew.
    for (const damaged of [5, 'str', [1, 2], null]) {
      writeFileSync(file, JSON.stringify({ ...data, tokenKeyPrints: damaged }));
      expect(new Store(dir).storedSecrets().keys, JSON.stringify(damaged)).toEqual([
        { digest: keyDigest('sk_live_second_key_4567'), prints: [] },
      ]);
    }
    await new Store(dir).setToken(REAL, 'token-value-5678', keyTrace('sk_live_second_key_4567'));
    expect(new Store(dir).storedSecrets().keys).toEqual([keyTrace('sk_live_second_key_4567')]);
    await new Store(dir).deleteToken(REAL);
    expect(new Store(dir).storedSecrets().keys).toEqual([]);
    expect(readFileSync(file, 'utf8')).not.toMatch(/:\d+:\d+:/);
  });

  const tempDir = useTempDirs();

  it('keeps one token per base URL and deletes them one by one', async () => {
    const store = new Store(tempDir());
    expect(store.getToken(REAL)).toBeUndefined();
    await store.setToken(REAL, 'real-token-aaaaaaaa', { digest: 'key-digest-0123', prints: [] });
    await store.setToken(SANDBOX, 'sandbox-token-bbbbbbbb', { digest: 'key-digest-0123', prints: [] });
    expect(store.getToken(REAL)).toBe('real-token-aaaaaaaa');
    expect(store.getToken(SANDBOX)).toBe('sandbox-token-bbbbbbbb');

    expect(await store.deleteToken(SANDBOX)).toBe(true);
    expect(store.getToken(SANDBOX)).toBeUndefined();
    expect(store.getToken(REAL)).toBe('real-token-aaaaaaaa');
    expect(await store.deleteToken(SANDBOX)).toBe(false);
  });

  it('persists tokens across Store instances, in credentials.json only', async () => {
    const dir = tempDir();
    await new Store(dir).setToken(REAL, 'persisted-token-cccccccc', { digest: 'key-digest-0123', prints: [] });
    const again = new Store(dir);
    expect(again.getToken(REAL)).toBe('persisted-token-cccccccc');
    expect(again.credentialsPath).toBe(join(dir, 'credentials.json'));
    expect(readFileSync(again.credentialsPath, 'utf8')).toContain('persisted-token-cccccccc');
    await again.setSetting('timeout', '1000');
    expect(readFileSync(join(dir, 'config.json'), 'utf8')).not.toContain('persisted-token-cccccccc');
  });

  it('keeps a base URL containing dots as one key (no dot-notation nesting)', async () => {
    const store = new Store(tempDir());
    await store.setToken(REAL, 'dotted-token-dddddddd', { digest: 'key-digest-0123', prints: [] });
    const saved = JSON.parse(readFileSync(store.credentialsPath, 'utf8')) as { tokens: Record<string, string> };
    expect(saved.tokens[REAL]).toBe('dotted-token-dddddddd');
  });

  it.runIf(posix)('writes credentials.json with mode 0600', async () => {
    const store = new Store(tempDir());
    await store.setToken(REAL, 'mode-token-eeeeeeee', { digest: 'key-digest-0123', prints: [] });
    expect(mode(store.credentialsPath)).toBe(0o600);
  });

  it.runIf(posix)('leaves credentials.json 0600 after updating one that was world-readable', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'credentials.json'), '{"tokens":{}}', { mode: 0o644 });
    chmodSync(join(dir, 'credentials.json'), 0o644);
    const store = new Store(dir);
    await store.setToken(REAL, 'fresh-token-ffffffff', { digest: 'key-digest-0123', prints: [] });
    expect(mode(store.credentialsPath)).toBe(0o600);
  });

  it("names the file when 'tokens' is not an object, and leaves it as it was", () => {
    const dir = tempDir();
    const file = join(dir, 'credentials.json');
    writeFileSync(file, '{"tokens":"oops"}');
    const error = thrown(() => new Store(dir).getToken(REAL));
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).file).toBe(file);
    expect(readFileSync(file, 'utf8')).toBe('{"tokens":"oops"}');
  });
});

describe('Store settings', () => {
  const tempDir = useTempDirs();

  it('sets, lists and unsets settings, persisted in config.json', async () => {
    const dir = tempDir();
    const store = new Store(dir);
    await store.setSetting('baseUrl', SANDBOX);
    await store.setSetting('timeout', '5000');
    expect(new Store(dir).getSetting('baseUrl')).toBe(SANDBOX);
    expect(new Store(dir).listSettings()).toEqual({ baseUrl: SANDBOX, timeout: '5000' });
    await store.unsetSetting('timeout');
    expect(new Store(dir).getSetting('timeout')).toBeUndefined();
  });

  it('throws a StoreError naming a corrupt config.json and leaves its bytes unchanged', () => {
    const dir = tempDir();
    const file = join(dir, 'config.json');
    const damaged = '{"baseUrl": "https://app.ded';
    writeFileSync(file, damaged, { mode: 0o600 });
    const error = thrown(() => new Store(dir).getSetting('baseUrl'));
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ exitCode: 2, code: 'store', file });
    expect((error as StoreError).message).toContain(file);
    expect(readFileSync(file, 'utf8')).toBe(damaged);
  });

  it('throws a StoreError naming a corrupt credentials.json and leaves its bytes unchanged', async () => {
    const dir = tempDir();
    const file = join(dir, 'credentials.json');
    const damaged = '{"tokens": {"https://app.dedit.io": "eyJ';
    writeFileSync(file, damaged, { mode: 0o600 });
    const error = thrown(() => new Store(dir).getToken(REAL));
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).file).toBe(file);
    expect(readFileSync(file, 'utf8')).toBe(damaged);
    // Setting a token must not wipe the damaged file either. (A token comes from a login, which was
    // sent: exit 1, not the StoreError's 2, which says nothing was.)
    const refused = await rejection(
      new Store(dir).setToken(REAL, 'new-token-gggggggg', { digest: 'key-digest-0123', prints: [] }),
    );
    expect(refused).toMatchObject({ exitCode: 1, message: expect.stringContaining(file) });
    expect((refused as Error).message).toMatch(/^the login went through, but its token was not stored: /);
    expect((refused as Error).cause).toBeInstanceOf(StoreError);
    expect(readFileSync(file, 'utf8')).toBe(damaged);
  });
});

describe('Store.service', () => {
  const tempDir = useTempDirs();

  it('keeps each base URL in its own directory', () => {
    const dir = tempDir();
    const store = new Store(dir);
    const real = store.service(REAL);
    const sandbox = store.service(SANDBOX);
    expect(real.dir).toMatch(new RegExp(`^${escape(join(dir, 'services', 'app.dedit.io-'))}[0-9a-f]{16}$`));
    expect(sandbox.dir).toMatch(new RegExp(`^${escape(join(dir, 'services', 'http_127.0.0.1-8080-'))}[0-9a-f]{16}$`));
    expect(real.baseUrl).toBe(REAL);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('gives distinct, file-system-safe names to http and https of the same host', () => {
    expect(serviceDirName('https://localhost:8080')).not.toBe(serviceDirName('http://localhost:8080'));
    expect(serviceDirName('https://host.example/a/b?c')).toMatch(/^[A-Za-z0-9._-]+$/);
  });
});

describe('defaultStoreDir', () => {
  it('is NOTARIZE_CONFIG_DIR when set', () => {
    expect(defaultStoreDir({ NOTARIZE_CONFIG_DIR: '/srv/notarize', XDG_CONFIG_HOME: '/x' })).toBe('/srv/notarize');
  });

  it.runIf(process.platform === 'linux')(
    'is under XDG_CONFIG_HOME, else ~/.config; an empty variable counts as unset',
    () => {
      expect(defaultStoreDir({ XDG_CONFIG_HOME: '/cfg' })).toBe(join('/cfg', 'notarize'));
      const fallback = join(homedir(), '.config', 'notarize');
      expect(defaultStoreDir({})).toBe(fallback);
      // Not `notarize` relative to the current directory.
      expect(defaultStoreDir({ NOTARIZE_CONFIG_DIR: '', XDG_CONFIG_HOME: '' })).toBe(fallback);
      // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
      expect(defaultStoreDir({ HOME: '/home/ci', XDG_CONFIG_HOME: 'relative' })).toBe('/home/ci/.config/notarize');
    },
  );

  it.runIf(process.platform !== 'win32')(
    'refuses an empty or relative HOME, and a relative NOTARIZE_CONFIG_DIR (the store, the token with it, would land in the current directory)',
    () => {
      for (const home of ['', 'relative/home']) {
        const error = thrown(() => defaultStoreDir({ HOME: home }));
        expect(error).toBeInstanceOf(UsageError);
        expect(error).toMatchObject({ exitCode: 2, code: 'no_store_dir' });
        expect((error as UsageError).hint).toMatch(/NOTARIZE_CONFIG_DIR/);
      }
      // NOTARIZE_CONFIG_DIR is the user's own choice: taken as given.
      expect(defaultStoreDir({ HOME: '', NOTARIZE_CONFIG_DIR: '/srv/n' })).toBe('/srv/n');
      // Unless relative, for the same reason (a `~` a workflow's env: leaves as it is, a folder named
      // `~` in the build's output then).
      for (const [dir, hint] of [
        ['~/.notarize', /a shell expands '~', a workflow's env: does not: .*"\$HOME\/\.notarize"/],
        ['.notarize', /absolute path, e\.g\. "\$PWD\/\.notarize"/],
        ['store/', /absolute path/],
      ] as const) {
        const error = thrown(() => defaultStoreDir({ HOME: '/home/ci', NOTARIZE_CONFIG_DIR: dir }));
        expect(error).toBeInstanceOf(UsageError);
        expect(error).toMatchObject({ exitCode: 2, code: 'no_store_dir' });
        expect((error as UsageError).message).toContain(`NOTARIZE_CONFIG_DIR is a relative path ('${dir}')`);
        expect((error as UsageError).hint).toMatch(hint);
      }
      // On Linux an absolute XDG_CONFIG_HOME places the store: HOME is not needed then.
      if (process.platform === 'linux')
        expect(defaultStoreDir({ HOME: '', XDG_CONFIG_HOME: '/cfg' })).toBe('/cfg/notarize');
    },
  );
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
