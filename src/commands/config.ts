/**
 * `notarize config get|set|unset|list|path`: the stored settings. `get` and
 * `list` show the value in effect and where it comes from, following the
 * one precedence rule: flag > environment > store > default.
 */
import { Argument, type Command } from 'commander';
import type { Context } from '../context.js';
import type { RowsResult, ValueResult } from '../output/present.js';
import { SETTINGS, settingDefinition, type SettingKey, type SettingSource } from '../settings.js';
import type { Store } from '../store/store.js';
import { forTerminal } from '../output/safe-text.js';
import { finish, viewOf, viewWithoutTables } from './action.js';
import { examples, withValues } from './options.js';

/** A setting's value in effect and where it comes from, by the same rule (and messages) as every command's. */
export type ResolveSetting = (key: SettingKey) => { value: string; source: SettingSource };

/** A `<key>` argument: one of the settings, which --help and shell completion list. */
function keyArgument(): Argument {
  return withValues(
    new Argument('<key>', 'a setting'),
    SETTINGS.map((s) => s.key),
  );
}

export function configure(command: Command, context: () => Context): void {
  const keys = SETTINGS.map((s) => `${s.key} (${s.env})`).join(', ');
  command.addHelpText(
    'after',
    `\nSettings: ${keys}.\n${examples([
      'notarize config set baseUrl http://127.0.0.1:8787',
      'notarize config list',
      '# CI: settings come from the environment, no store needed',
      'NOTARIZE_BASE_URL=https://app.dedit.io notarize config get baseUrl',
    ])}`,
  );
  const resolver =
    (ctx: Context): ResolveSetting =>
    (key) =>
      ctx.resolveSetting(key);
  command
    .command('get')
    .addArgument(keyArgument())
    .description('print the value in effect')
    .action(async (key: string) => {
      const ctx = context();
      await finish(await viewWithoutTables(ctx), runConfigGet({ key, resolve: resolver(ctx) }));
    });
  command
    .command('set')
    .addArgument(keyArgument())
    .argument('<value>', 'the value to store')
    .description('store a value')
    .action(async (key: string, value: string) => {
      const ctx = context();
      await finish(
        await viewWithoutTables(ctx),
        await runConfigSet({ key, value, store: () => ctx.store, resolve: resolver(ctx) }),
      );
    });
  command
    .command('unset')
    .addArgument(keyArgument())
    .description('remove a stored value (the default applies again)')
    .action(async (key: string) => {
      const ctx = context();
      await finish(
        await viewWithoutTables(ctx),
        await runConfigUnset({ key, store: () => ctx.store, resolve: resolver(ctx) }),
      );
    });
  command
    .command('list')
    .description('every setting with its value and where it comes from')
    .action(async () => {
      const ctx = context();
      await finish(await viewOf(ctx), runConfigList({ resolve: resolver(ctx) }));
    });
  command
    .command('path')
    .description('print the store directory (with --json: {"path"})')
    .action(async () => {
      const ctx = context();
      await finish(
        await viewWithoutTables(ctx),
        runConfigPath({ store: () => ctx.store, toTerminal: ctx.io.stdoutIsTTY }),
      );
    });
}

/** The value in effect of a setting named by the user, and where it comes from. */
export function runConfigGet(options: { key: string; resolve: ResolveSetting }): ValueResult {
  const { key } = options;
  const { value, source } = options.resolve(settingDefinition(key).key);
  return { kind: 'value', json: { key, value, source }, text: { data: value } };
}

interface ChangeOptions {
  key: string;
  store: () => Store;
  /** The value in effect once changed: an environment variable or a flag may still override the store. */
  resolve: ResolveSetting;
}

/** Stores a setting's value, checked and normalized as when it is used. */
export async function runConfigSet(options: ChangeOptions & { value: string }): Promise<ValueResult> {
  const { key } = options;
  const definition = settingDefinition(key);
  const normalized = definition.parse(options.value);
  await options.store().setSetting(definition.key, normalized);
  return { kind: 'value', info: [`${key} = ${normalized}`], ...overridden(definition.key, options.resolve) };
}

/** Removes a setting's stored value. */
export async function runConfigUnset(options: ChangeOptions): Promise<ValueResult> {
  const { key } = options;
  const definition = settingDefinition(key);
  await options.store().unsetSetting(definition.key);
  return { kind: 'value', info: [`${key} unset`], ...overridden(definition.key, options.resolve) };
}

/**
 * A warning when what was just stored is not what commands will use: the
 * environment (a variable exported long ago) or a flag outranks the store,
 * and `config set` would otherwise look as if it had worked.
 */
function overridden(key: SettingKey, resolve: ResolveSetting): { warnings?: string[] } {
  let source: SettingSource;
  try {
    ({ source } = resolve(key));
  } catch {
    // The overriding value is itself invalid: every command that uses it says so.
    return {};
  }
  if (source === 'env') {
    const { env } = settingDefinition(key);
    return { warnings: [`${env} is set: commands use its value, not the stored one, while it is set`] };
  }
  if (source === 'flag') {
    return { warnings: [`a flag on this command line gives ${key}: commands use a flag's value over the stored one`] };
  }
  return {};
}

/** One row of `config list`. */
export interface SettingRow {
  key: SettingKey;
  value: string;
  source: SettingSource;
  env: string;
  description: string;
}

/** Every setting with its value in effect and where it comes from. */
export function runConfigList(options: { resolve: ResolveSetting }): RowsResult<SettingRow> {
  return {
    kind: 'rows',
    rows: SETTINGS.map((s) => ({ key: s.key, ...options.resolve(s.key), env: s.env, description: s.description })),
    headers: ['KEY', 'VALUE', 'SOURCE', 'ENV'],
    cells: (r) => [r.key, r.value, r.source, r.env],
  };
}

/**
 * The store directory: printed as is into a pipe (`$(notarize config path)`),
 * with what could act on a terminal escaped on one (r115: a path holding an
 * escape sequence set the window's title), as --json is there.
 */
export function runConfigPath(options: { store: () => Store; toTerminal?: boolean }): ValueResult {
  const path = options.store().dir;
  // With --json, JSON as every other command prints: `{"path"}` (it printed the bare path, no JSON).
  return { kind: 'value', json: { path }, text: { data: options.toTerminal ? forTerminal(path) : path } };
}
