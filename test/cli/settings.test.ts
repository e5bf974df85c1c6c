/**
 * The settings resolver (src/settings.ts): one rule, flag > environment >
 * stored value > default, with the source of each value, for every declared
 * setting; stored values live in a real Store on a temporary directory.
 * (parseBaseUrl and the config keys' lookup are tested in test/unit/settings.test.ts.)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import { Context } from '../../src/context.js';
import { StoreError, UsageError } from '../../src/errors.js';
import {
  ALL_SETTINGS,
  checkSettingFlags,
  resolveSetting,
  settingDefinition,
  SETTINGS,
  type SettingInputs,
  type SettingKey,
} from '../../src/settings.js';
import * as storeModule from '../../src/store/store.js';
import { Store } from '../../src/store/store.js';
import { bufferIO } from '../helpers/io.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs('notarize-settings-');

/** A real store on a fresh temporary directory, holding `stored`. */
async function storeWith(stored: Record<string, string> = {}): Promise<Store> {
  const store = new Store(join(tempDir(), 'store'));
  for (const [key, value] of Object.entries(stored)) await store.setSetting(key, value);
  return store;
}

/** Resolver inputs over `store`, recording which keys the store was asked for. */
function inputs(store: Store, given: Partial<Omit<SettingInputs, 'stored'>> = {}) {
  const asked: SettingKey[] = [];
  const sources: SettingInputs = {
    flags: given.flags ?? {},
    env: given.env ?? {},
    stored: (key) => {
      asked.push(key);
      return store.getSetting(key);
    },
  };
  return { sources, asked };
}

/** The UsageError `fn` throws. */
function refusal(fn: () => unknown): UsageError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(UsageError);
  return caught as UsageError;
}

describe('resolveSetting: flag > environment > store > default', () => {
  it('takes each source in turn as the ones above it are removed, and says which', async () => {
    const store = await storeWith({ timeout: '3000' });
    const flags = { timeout: '1000' };
    const env = { NOTARIZE_TIMEOUT: '2000' };
    expect(resolveSetting('timeout', inputs(store, { flags, env }).sources)).toEqual({ value: '1000', source: 'flag' });
    expect(resolveSetting('timeout', inputs(store, { env }).sources)).toEqual({ value: '2000', source: 'env' });
    expect(resolveSetting('timeout', inputs(store).sources)).toEqual({ value: '3000', source: 'store' });
    expect(resolveSetting('timeout', inputs(await storeWith()).sources)).toEqual({ value: '30000', source: 'default' });
  });

  it.each(SETTINGS.map((s) => [s.key, s]))('%s: its default, through its own parse', async (_key, definition) => {
    const { value, source } = resolveSetting(definition.key, inputs(await storeWith()).sources);
    expect(source).toBe('default');
    expect(value).toBe(definition.parse(definition.default));
  });

  it('returns values normalised by the setting’s parse, from every source', async () => {
    const store = await storeWith({ baseUrl: 'https://stored.example/' });
    const resolve = (given: Partial<Omit<SettingInputs, 'stored'>>) =>
      resolveSetting('baseUrl', inputs(store, given).sources).value;
    expect(resolve({ flags: { baseUrl: 'https://flag.example/' } })).toBe('https://flag.example');
    expect(resolve({ env: { NOTARIZE_BASE_URL: 'https://env.example/' } })).toBe('https://env.example');
    expect(resolve({})).toBe('https://stored.example');
    expect(resolveSetting('retries', inputs(store, { env: { NOTARIZE_RETRIES: ' 07 ' } }).sources).value).toBe('7');
  });

  it('asks the store nothing when a flag or a variable gives the value', async () => {
    const store = await storeWith({ retries: '5' });
    const byFlag = inputs(store, { flags: { retries: '1' } });
    resolveSetting('retries', byFlag.sources);
    const byEnv = inputs(store, { env: { NOTARIZE_RETRIES: '2' } });
    resolveSetting('retries', byEnv.sources);
    const byStore = inputs(store);
    resolveSetting('retries', byStore.sources);
    expect([byFlag.asked, byEnv.asked, byStore.asked]).toEqual([[], [], ['retries']]);
  });
});

describe('an empty environment variable counts as unset', () => {
  it('falls through to the stored value, then to the default', async () => {
    const env = { NOTARIZE_TIMEOUT: '', NOTARIZE_BASE_URL: '' };
    const store = await storeWith({ timeout: '4000' });
    expect(resolveSetting('timeout', inputs(store, { env }).sources)).toEqual({ value: '4000', source: 'store' });
    expect(resolveSetting('baseUrl', inputs(store, { env }).sources)).toEqual({
      value: 'https://app.dedit.io',
      source: 'default',
    });
  });

  it('but a blank one is a value, refused like any bad one, and an empty flag too', async () => {
    const store = await storeWith();
    const blank = refusal(() => resolveSetting('timeout', inputs(store, { env: { NOTARIZE_TIMEOUT: ' ' } }).sources));
    expect(blank.message).toMatch(/^invalid timeout ' ': expected a whole number from 1 to 3600000$/);
    expect(blank.hint).toBe('set by NOTARIZE_TIMEOUT');
    const empty = refusal(() => resolveSetting('timeout', inputs(store, { flags: { timeout: '' } }).sources));
    expect(empty.hint).toBe('given with --timeout');
  });

  it('`config get` and `config list` follow the same rule (in process, through main)', async () => {
    const storeDir = tempDir();
    const run = async (argv: string[], env: NodeJS.ProcessEnv) => {
      const buffers = bufferIO();
      const code = await main({ argv, env: { NOTARIZE_CONFIG_DIR: storeDir, NO_COLOR: '1', ...env }, io: buffers.io });
      expect(code, buffers.stderr()).toBe(0);
      return buffers.stdout();
    };
    await run(['config', 'set', 'retries', '6'], {});
    const empty = { NOTARIZE_RETRIES: '', NOTARIZE_TIMEOUT: '' };
    expect(JSON.parse(await run(['config', 'get', 'retries', '--json'], empty))).toEqual({
      key: 'retries',
      value: '6',
      source: 'store',
    });
    const list = JSON.parse(await run(['config', 'list', '--json'], empty)) as { key: string; source: string }[];
    expect(list.map((row) => [row.key, row.source])).toEqual([
      ['baseUrl', 'default'],
      ['timeout', 'default'],
      ['retries', 'store'],
    ]);
  });
});

describe('refusals name where the bad value came from', () => {
  it('a flag, a variable; a stored value is a store error naming its file', async () => {
    const store = await storeWith({ timeout: '1000' });
    const flag = refusal(() => resolveSetting('retries', inputs(store, { flags: { retries: '21' } }).sources));
    expect([flag.message, flag.hint]).toEqual([
      "invalid retries '21': expected a whole number from 0 to 20",
      'given with --retries',
    ]);
    const env = refusal(() =>
      resolveSetting('baseUrl', inputs(store, { env: { NOTARIZE_BASE_URL: 'ftp://x' } }).sources),
    );
    expect(env.code).toBe('unsafe_base_url');
    expect(env.hint).toBe('set by NOTARIZE_BASE_URL; use e.g. https://app.dedit.io');
    // A hand-edited config.json: the store checks the value as it reads it.
    writeFileSync(join(store.dir, 'config.json'), JSON.stringify({ timeout: '0' }));
    const stored = refusal(() => resolveSetting('timeout', inputs(store).sources));
    expect(stored).toBeInstanceOf(StoreError);
    expect((stored as StoreError).file).toBe(join(store.dir, 'config.json'));
    // Said as one value to mend with the config command, not a damaged file to move aside (r99).
    expect([stored.message, stored.hint]).toEqual([
      `store file ${join(store.dir, 'config.json')} holds a setting notarize refuses: invalid timeout '0': expected a whole number from 1 to 3600000`,
      '`notarize config set timeout <value>` replaces it, `notarize config unset timeout` removes it',
    ]);
  });

  it('checkSettingFlags refuses a bad global flag up front, and lets absent ones be', () => {
    expect(() => checkSettingFlags({})).not.toThrow();
    expect(() => checkSettingFlags({ baseUrl: 'https://x.example', timeout: '5', retries: '0' })).not.toThrow();
    expect(refusal(() => checkSettingFlags({ baseUrl: 'http://example.com' })).hint).toMatch(
      /^given with --base-url; /,
    );
    expect(refusal(() => checkSettingFlags({ timeout: '0' })).hint).toBe('given with --timeout');
  });
});

describe('retryDelay: a setting of the environment only', () => {
  it('is declared, with its variable, and is not a config key', () => {
    const retryDelay = ALL_SETTINGS.find((s) => s.key === 'retryDelay');
    expect(retryDelay).toMatchObject({ env: 'NOTARIZE_RETRY_DELAY_MS', default: '500', storable: false });
    expect(SETTINGS.map((s) => s.key)).toEqual(['baseUrl', 'timeout', 'retries']);
    expect(refusal(() => settingDefinition('retryDelay')).message).toBe("unknown setting 'retryDelay'");
  });

  it('comes from the variable or the default, never from a flag or the store', async () => {
    const store = await storeWith({ retryDelay: '7' });
    const fromDefault = inputs(store, { flags: { retryDelay: '9' } });
    expect(resolveSetting('retryDelay', fromDefault.sources)).toEqual({ value: '500', source: 'default' });
    expect(fromDefault.asked).toEqual([]);
    const env = (value: string) => inputs(store, { env: { NOTARIZE_RETRY_DELAY_MS: value } }).sources;
    expect(resolveSetting('retryDelay', env('0'))).toEqual({ value: '0', source: 'env' });
    expect(resolveSetting('retryDelay', env('60000'))).toEqual({ value: '60000', source: 'env' });
    expect(resolveSetting('retryDelay', env(''))).toEqual({ value: '500', source: 'default' });
  });

  it.each(['60001', 'soon', '-1', '1e3'])('%j is refused, naming the variable', async (value) => {
    const store = await storeWith();
    const error = refusal(() =>
      resolveSetting('retryDelay', inputs(store, { env: { NOTARIZE_RETRY_DELAY_MS: value } }).sources),
    );
    expect(error.message).toBe(`invalid retry delay '${value}': expected a whole number from 0 to 60000`);
    expect(error.hint).toBe('set by NOTARIZE_RETRY_DELAY_MS');
  });
});

describe('Context', () => {
  it('resolves through the same resolver: its store, its environment, its global flags', async () => {
    const store = await storeWith({ timeout: '3000', retries: '4' });
    const env = { NOTARIZE_CONFIG_DIR: store.dir, NOTARIZE_RETRIES: '', NOTARIZE_RETRY_DELAY_MS: '25' };
    const context = new Context(bufferIO().io, env, { baseUrl: 'https://flag.example/' }, storeModule);
    expect(context.resolveSetting('baseUrl')).toEqual({ value: 'https://flag.example', source: 'flag' });
    expect(context.resolveSetting('timeout')).toEqual({ value: '3000', source: 'store' });
    expect(context.resolveSetting('retries')).toEqual({ value: '4', source: 'store' });
    expect(context.setting('retryDelay')).toBe('25');
    expect(context.baseUrl).toBe('https://flag.example');
  });

  it('refuses a bad global flag when it is built, whatever the command', () => {
    const error = refusal(() => new Context(bufferIO().io, {}, { retries: 'x' }, storeModule));
    expect(error.hint).toBe('given with --retries');
  });
});
