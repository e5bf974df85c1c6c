/**
 * What every command's action does around its run function: choose the view
 * of the output the command line asked for, and hand the run's result to
 * the one renderer (output/present.ts), then end with the run's failure, for
 * main() to turn into the exit code.
 */
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';
import { loadingModule } from '../fd-shortage.js';
import { itemResultsFor, loadRender, present, type CommandResult, type Format, type View } from '../output/present.js';
import type { ItemResults } from '../output/results.js';

/**
 * The view this run asked for: `format` when a command has its own option
 * (--output), else --json or a table. --json is `--output json`: with
 * another --output the line asks for two outputs, and neither is guessed.
 * For a table, the renderer is loaded here, before the run (see loadRender),
 * unless the command never draws one (`tables: false`, viewWithoutTables): its text is lines
 * (hash) or a value (config get, login...). Such a command that drew a table
 * anyway would still get one, loaded as it is shown.
 */
export async function viewOf(ctx: Context, format?: Format, { tables = true } = {}): Promise<View> {
  if (format !== undefined && format !== 'json' && ctx.globals.json) {
    throw new UsageError(`--json and --output ${format} ask for two different outputs`, {
      hint: '--json is --output json: give one of them',
    });
  }
  const view: View = { io: ctx.io, env: ctx.env, format: format ?? (ctx.globals.json ? 'json' : 'table') };
  if (view.format === 'table' && tables) await loadingModule(loadRender);
  return view;
}

/** viewOf for a command that never draws a table: its text is lines (hash) or a value (config get...). */
export function viewWithoutTables(ctx: Context): Promise<View> {
  return viewOf(ctx, undefined, { tables: false });
}

/** Shows `result`, then throws its failure, if any: main() is the one place exit codes are decided. */
export async function finish(view: View, result: CommandResult): Promise<void> {
  await present(view, result);
  if (result.failure !== undefined) throw result.failure;
}

/**
 * For a command over documents (register, verify): runs it with the item
 * results this view shows as they settle (NDJSON) or at the end, then
 * finishes as above.
 */
export async function finishItems(view: View, run: (items: ItemResults) => Promise<CommandResult>): Promise<void> {
  await finish(view, await run(itemResultsFor(view)));
}
