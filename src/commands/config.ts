/**
 * `notarize config get|set|unset|list|path`: the stored settings. `get` and
 * `list` show the value in effect and where it comes from, following the
 * one precedence rule: flag > environment > store > default.
 */
import { Argument, type Command } from 'commander';
import type { Context } from '../context.js';
import { renderTable } from '../output/render.js';
import { SETTINGS, settingDefinition, type SettingDefinition } from '../settings.js';
import { examples, withValues } from './options.js';

/** The value in effect, by the same rule (and with the same messages) as every command's. */
function effective(ctx: Context, definition: SettingDefinition) {
  return ctx.resolveSetting(definition.key);
}

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
  command
    .command('get')
    .addArgument(keyArgument())
    .description('print the value in effect')
    .action((key: string) => {
      const ctx = context();
      const { value, source } = effective(ctx, settingDefinition(key));
      ctx.io.data(ctx.globals.json ? JSON.stringify({ key, value, source }) : value);
    });
  command
    .command('set')
    .addArgument(keyArgument())
    .argument('<value>', 'the value to store')
    .description('store a value')
    .action(async (key: string, value: string) => {
      const ctx = context();
      const normalized = settingDefinition(key).parse(value);
      await ctx.store.setSetting(key, normalized);
      ctx.io.info(`${key} = ${normalized}`);
    });
  command
    .command('unset')
    .addArgument(keyArgument())
    .description('remove a stored value (the default applies again)')
    .action(async (key: string) => {
      const ctx = context();
      settingDefinition(key);
      await ctx.store.unsetSetting(key);
      ctx.io.info(`${key} unset`);
    });
  command
    .command('list')
    .description('every setting with its value and where it comes from')
    .action(() => {
      const ctx = context();
      const rows = SETTINGS.map((s) => ({ key: s.key, ...effective(ctx, s), env: s.env, description: s.description }));
      if (ctx.globals.json) ctx.io.dataJsonArray(rows);
      else
        ctx.io.data(
          renderTable(
            ['KEY', 'VALUE', 'SOURCE', 'ENV'],
            rows.map((r) => [r.key, r.value, r.source, r.env]),
            ctx.io.colour,
          ),
        );
    });
  command
    .command('path')
    .description('print the store directory')
    .action(() => {
      const ctx = context();
      ctx.io.data(ctx.store.dir);
    });
}
