/**
 * Parsing raw command-line options through a zod schema at the boundary, so
 * a bad value is a usage error (exit 2) naming the option, never a crash.
 */
import { Option, type Argument, type Command } from 'commander';
import { z } from 'zod';
import { UsageError } from '../errors.js';
import { commandPath } from './command.js';

/**
 * Validates `raw` (commander's opts()) with `schema`; throws UsageError on
 * failure, whose hint names `command`'s own --help.
 */
export function parseOptions<S extends z.ZodType>(schema: S, raw: unknown, command: Command): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const option = issue?.path.map(String).join('.') ?? '';
  const flag = option ? `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}` : 'options';
  throw new UsageError(`invalid ${flag}${given(raw, issue?.path[0])}: ${issue?.message ?? 'invalid value'}`, {
    hint: `see \`${commandPath(command)} --help\``,
  });
}

/** " '<value>'" for a short one-line value the user typed, so the message shows what was refused. */
function given(raw: unknown, key: PropertyKey | undefined): string {
  if (key === undefined || typeof raw !== 'object' || raw === null) return '';
  const value = (raw as Record<PropertyKey, unknown>)[key];
  return typeof value === 'string' && value.length <= 40 && !/\p{Cc}/u.test(value) ? ` '${value}'` : '';
}

/** Examples appended to a command's --help. */
export function examples(lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  ${line}`).join('\n')}\n`;
}

/**
 * Declares the values an argument takes, for `--help` and shell completion.
 * The action still checks the value, with its own message and hint:
 * commander's .choices() would reject it first, with its own.
 */
export function withValues(argument: Argument, values: readonly string[]): Argument {
  argument.argChoices = [...values];
  return argument;
}

/** The formats of a batch command's results (register, verify): `--output`, where --json gives `json`. */
export const outputSchema = z.enum(['table', 'json', 'ndjson']).optional();

/**
 * `--output <format>` of the batch commands; `alone`: what json prints for
 * one document named alone, which is not the array (as with --json).
 */
export function outputOption(alone: string): Option {
  return new Option(
    '--output <format>',
    `table, json (one array; ${alone}, as with --json) or ndjson (a line per document as it finishes, even for one)`,
  ).choices(outputSchema.unwrap().options);
}
