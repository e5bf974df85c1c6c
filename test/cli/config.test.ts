/**
 * The run functions of `config get|set|unset|list|path`, called in process
 * with a real Context over a temporary store: values in effect and where
 * they come from, values stored (checked and normalized) and removed, and
 * through the renderer, what `notarize config ...` prints.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  runConfigGet,
  runConfigList,
  runConfigPath,
  runConfigSet,
  runConfigUnset,
  type ResolveSetting,
} from '../../src/commands/config.js';
import { Context } from '../../src/context.js';
import { present } from '../../src/output/present.js';
import { forTerminal } from '../../src/output/safe-text.js';
import * as storeModule from '../../src/store/store.js';
import { SETTINGS } from '../../src/settings.js';
import { bufferIO, type BufferIO } from '../helpers/io.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs('notarize-config-');

interface Setup extends BufferIO {
  ctx: Context;
  resolve: ResolveSetting;
  store: () => storeModule.Store;
}

/** A context over a fresh store, with `env` and the global flags given. */
function setup(
  env: NodeJS.ProcessEnv = {},
  globals: { timeout?: string; json?: boolean } = {},
  dir = tempDir(),
): Setup {
  const out = bufferIO();
  const ctx = new Context(out.io, { NOTARIZE_CONFIG_DIR: dir, ...env }, globals, storeModule);
  return { ...out, ctx, resolve: (key) => ctx.resolveSetting(key), store: () => ctx.store };
}

describe('config run functions', () => {
  it('get: the value in effect and its source, by flag > environment > store > default', async () => {
    const dir = tempDir();
    expect(runConfigGet({ key: 'timeout', resolve: setup({}, {}, dir).resolve })).toEqual({
      kind: 'value',
      json: { key: 'timeout', value: '30000', source: 'default' },
      text: { data: '30000' },
    });
    await runConfigSet({ key: 'timeout', value: '4000', ...setup({}, {}, dir) });
    expect(runConfigGet({ key: 'timeout', resolve: setup({}, {}, dir).resolve }).json).toMatchObject({
      value: '4000',
      source: 'store',
    });
    const fromEnv = setup({ NOTARIZE_TIMEOUT: '5000' }, {}, dir);
    expect(runConfigGet({ key: 'timeout', resolve: fromEnv.resolve }).json).toMatchObject({
      value: '5000',
      source: 'env',
    });
    const fromFlag = setup({ NOTARIZE_TIMEOUT: '5000' }, { timeout: '6000' }, dir);
    expect(runConfigGet({ key: 'timeout', resolve: fromFlag.resolve }).json).toMatchObject({
      value: '6000',
      source: 'flag',
    });
  });

  it('get: an unknown key is a usage error naming the known ones', () => {
    expect(() => runConfigGet({ key: 'colour', resolve: setup().resolve })).toThrow(
      expect.objectContaining({ exitCode: 2, message: "unknown setting 'colour'" }),
    );
  });

  it('set: stores the normalized value and says so; refuses an invalid one, storing nothing', async () => {
    const s = setup();
    const result = await runConfigSet({ key: 'baseUrl', value: 'http://127.0.0.1:8787/', ...s });
    expect(result).toEqual({ kind: 'value', info: ['baseUrl = http://127.0.0.1:8787'] });
    expect(s.store().getSetting('baseUrl')).toBe('http://127.0.0.1:8787');
    await expect(runConfigSet({ key: 'retries', value: 'many', ...s })).rejects.toMatchObject({
      exitCode: 2,
    });
    expect(s.store().getSetting('retries')).toBeUndefined();
  });

  it('unset: removes the stored value; the default applies again', async () => {
    const s = setup();
    await runConfigSet({ key: 'retries', value: '5', ...s });
    expect(await runConfigUnset({ key: 'retries', ...s })).toEqual({
      kind: 'value',
      info: ['retries unset'],
    });
    expect(runConfigGet({ key: 'retries', resolve: s.resolve }).json).toMatchObject({ source: 'default' });
  });

  it('set and unset warn when an environment variable or a flag outranks the store: what was stored is not what is used', async () => {
    const dir = tempDir();
    const fromEnv = setup({ NOTARIZE_TIMEOUT: '100' }, {}, dir);
    expect(await runConfigSet({ key: 'timeout', value: '5000', ...fromEnv })).toEqual({
      kind: 'value',
      info: ['timeout = 5000'],
      warnings: ['NOTARIZE_TIMEOUT is set: commands use its value, not the stored one, while it is set'],
    });
    expect(fromEnv.store().getSetting('timeout')).toBe('5000');
    expect((await runConfigUnset({ key: 'timeout', ...fromEnv })).warnings).toEqual([
      'NOTARIZE_TIMEOUT is set: commands use its value, not the stored one, while it is set',
    ]);
    const fromFlag = setup({}, { timeout: '6000' }, dir);
    expect((await runConfigSet({ key: 'timeout', value: '5000', ...fromFlag })).warnings).toEqual([
      "a flag on this command line gives timeout: commands use a flag's value over the stored one",
    ]);
    // An invalid variable is said by every command that uses it, not here.
    expect(
      await runConfigSet({ key: 'timeout', value: '5000', ...setup({ NOTARIZE_TIMEOUT: 'soon' }, {}, dir) }),
    ).toEqual({
      kind: 'value',
      info: ['timeout = 5000'],
    });
  });

  it('list: every declared setting, in order, with its value, source and variable', async () => {
    const s = setup({ NOTARIZE_RETRIES: '1' });
    const result = runConfigList({ resolve: s.resolve });
    expect(result.rows.map((r) => [r.key, r.source, r.env])).toEqual(
      SETTINGS.map((d) => [d.key, d.key === 'retries' ? 'env' : 'default', d.env]),
    );
    await present({ io: s.io, env: {}, format: 'table' }, result);
    const lines = s.stdout().trimEnd().split('\n');
    expect(lines[0]).toMatch(/^KEY +VALUE +SOURCE +ENV$/);
    expect(lines).toContainEqual(expect.stringMatching(/^retries +1 +env +NOTARIZE_RETRIES$/));
    expect(lines).toHaveLength(SETTINGS.length + 1);
  });

  it('path: the store directory as is, or with --json one line of JSON, as every command prints (it printed the bare path)', async () => {
    const dir = tempDir();
    for (const [format, printed] of [
      ['table', `${dir}\n`],
      ['json', `${JSON.stringify({ path: dir })}\n`],
    ] as const) {
      const s = setup({}, {}, dir);
      const result = runConfigPath({ store: s.store });
      expect(result).toEqual({ kind: 'value', json: { path: dir }, text: { data: dir } });
      await present({ io: s.io, env: {}, format }, result);
      expect(s.stdout()).toBe(printed);
    }
    // On a terminal, a path holding an escape sequence (a window title) or a bidi override is escaped (r115).
    const odd = join(tempDir(), 'st\u001b]0;T\u0007\u202eore');
    const s = setup({}, {}, odd);
    const onTerminal = runConfigPath({ store: s.store, toTerminal: true });
    expect(onTerminal.text).toEqual({ data: forTerminal(odd) });
    for (const raw of ['\u001b', '\u0007', '\u202e']) expect(forTerminal(odd)).not.toContain(raw);
    expect(runConfigPath({ store: s.store }).text).toEqual({ data: odd });
  });

  it('get through the renderer: the bare value, or one line of JSON with --json', async () => {
    const s = setup({ NOTARIZE_RETRIES: '2' });
    const result = runConfigGet({ key: 'retries', resolve: s.resolve });
    await present({ io: s.io, env: {}, format: 'table' }, result);
    await present({ io: s.io, env: {}, format: 'json' }, result);
    expect(s.stdout()).toBe('2\n{"key":"retries","value":"2","source":"env"}\n');
  });
});
