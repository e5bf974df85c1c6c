/**
 * Parsing raw command-line options through a zod schema at the boundary, so
 * a bad value is a usage error (exit 2) naming the option, never a crash.
 */
import type { Argument } from 'commander';
import type { z } from 'zod';
import { UsageError } from '../errors.js';

/** Validates `raw` (commander's opts()) with `schema`; throws UsageError on failure. */
export function parseOptions<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const option = issue?.path.map(String).join('.') ?? '';
  const flag = option ? `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}` : 'options';
  throw new UsageError(`invalid ${flag}: ${issue?.message ?? 'invalid value'}`, {
    hint: 'see `notarize <command> --help`',
  });
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
