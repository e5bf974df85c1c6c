/**
 * `notarize config`: set, get, list, unset and path, and the one precedence
 * rule (--base-url > NOTARIZE_BASE_URL > stored setting > default) seen in
 * the requests that reach sandboxes on 127.0.0.1.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_BASE_URL } from '../../src/settings.js';
import { expectFailure } from '../helpers/assert.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { routes } from '../helpers/sandbox.js';
import { sha256 } from '../helpers/documents.js';

let bed: Bed;
useBed((created) => (bed = created));

describe('config', () => {
  it('set, get, list, unset and path', async () => {
    const offline = { env: { NOTARIZE_BASE_URL: undefined }, noBaseUrlCheck: true };
    const path = await bed.main(['config', 'path'], offline);
    expect(path.code, path.stderr).toBe(0);
    expect(path.stdout).toBe(`${bed.storeDir}\n`);

    // The parent's NOTARIZE_* variables never reach the spawned bin.
    const parent = process.env.NOTARIZE_BASE_URL;
    process.env.NOTARIZE_BASE_URL = 'https://parent-environment.invalid';
    let unset;
    try {
      unset = await bed.run(['config', 'get', 'baseUrl', '--json'], offline);
    } finally {
      if (parent === undefined) delete process.env.NOTARIZE_BASE_URL;
      else process.env.NOTARIZE_BASE_URL = parent;
    }
    expect(unset.code).toBe(0);
    expect(JSON.parse(unset.stdout)).toEqual({ key: 'baseUrl', value: DEFAULT_BASE_URL, source: 'default' });

    const set = await bed.main(['config', 'set', 'baseUrl', `${bed.sandbox.url}/`], offline);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe('');
    expect(set.stderr).toContain(`baseUrl = ${bed.sandbox.url}`);

    const get = await bed.main(['config', 'get', 'baseUrl'], offline);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toBe(`${bed.sandbox.url}\n`);

    const list = await bed.main(['config', 'list'], offline);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^KEY +VALUE +SOURCE +ENV$/m);
    expect(list.stdout).toMatch(new RegExp(`^baseUrl +${bed.sandbox.url} +store +NOTARIZE_BASE_URL$`, 'm'));
    expect(list.stdout).toMatch(/^timeout +30000 +default +NOTARIZE_TIMEOUT$/m);
    const listJson = await bed.main(['config', 'list', '--json'], offline);
    expect(JSON.parse(listJson.stdout)).toContainEqual(
      expect.objectContaining({ key: 'baseUrl', value: bed.sandbox.url, source: 'store' }),
    );

    const removed = await bed.main(['config', 'unset', 'baseUrl'], offline);
    expect(removed.code).toBe(0);
    expect(removed.stderr).toMatch(/baseUrl unset/);
    const back = await bed.main(['config', 'get', 'baseUrl'], offline);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toBe(`${DEFAULT_BASE_URL}\n`);

    const unsafe = await bed.main(['config', 'set', 'baseUrl', 'http://example.com'], offline);
    expectFailure(unsafe, 2, /plain http to 'example\.com'/);
    const unknown = await bed.main(['config', 'get', 'colour'], offline);
    expectFailure(unknown, 2, /unknown setting 'colour'/);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('precedence: --base-url > NOTARIZE_BASE_URL > stored setting > default, for real requests', async () => {
    const storeSandbox = bed.sandbox;
    const envSandbox = await bed.extraSandbox({ apiKey: storeSandbox.apiKey });
    const flagSandbox = await bed.extraSandbox({ apiKey: storeSandbox.apiKey });
    const fromStore = { env: { ...bed.withKey(), NOTARIZE_BASE_URL: undefined }, noBaseUrlCheck: true };
    const set = await bed.main(['config', 'set', 'baseUrl', storeSandbox.url], fromStore);
    expect(set.code).toBe(0);

    const d1 = await bed.file('store.txt', 'via store');
    const viaStore = await bed.main(['register', d1], fromStore);
    expect(viaStore.code, viaStore.stderr).toBe(0);
    expect(viaStore.stdout).toContain(`${storeSandbox.url}/verification/${sha256('via store')}`);
    expect(routes(storeSandbox.calls)).toEqual(['login', 'request', 'forfait']);

    const d2 = await bed.file('env.txt', 'via env');
    const fromEnv = { env: { ...bed.withKey(), NOTARIZE_BASE_URL: envSandbox.url } };
    const viaEnv = await bed.main(['register', d2], fromEnv);
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    expect(routes(envSandbox.calls)).toEqual(['login', 'request', 'forfait']);
    const getEnv = await bed.main(['config', 'get', 'baseUrl', '--json'], fromEnv);
    expect(JSON.parse(getEnv.stdout)).toEqual({ key: 'baseUrl', value: envSandbox.url, source: 'env' });

    const d3 = await bed.file('flag.txt', 'via flag');
    const viaFlag = await bed.main(['register', d3, '--base-url', flagSandbox.url], fromEnv);
    expect(viaFlag.code, viaFlag.stderr).toBe(0);
    expect(routes(flagSandbox.calls)).toEqual(['login', 'request', 'forfait']);
    const getFlag = await bed.main(['config', 'get', 'baseUrl', '--json', '--base-url', flagSandbox.url], fromEnv);
    expect(JSON.parse(getFlag.stdout)).toEqual({ key: 'baseUrl', value: flagSandbox.url, source: 'flag' });

    // Each went only where it should.
    expect(storeSandbox.calls).toHaveLength(3);
    expect(envSandbox.calls).toHaveLength(3);
    expect(flagSandbox.records.has(sha256('via flag'))).toBe(true);
    expect(envSandbox.records.has(sha256('via flag'))).toBe(false);
  });
});
