/**
 * The input options shared by `register`, `hash` and `verify`, so the three
 * accept documents the same way (see core/inputs.ts).
 */
import { Option, type Command } from 'commander';
import { z } from 'zod';
import type { InputOptions } from '../core/inputs.js';

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Adds --recursive, --include, --exclude, --files-from and -0 to a command. */
export function addInputOptions(command: Command): Command {
  return command
    .option('-r, --recursive', 'process the files under directories')
    .option(
      '--include <glob>',
      'with --recursive: only files matching, of those found in folders (repeatable; no slash: matches the name)',
      collect,
    )
    .option(
      '--exclude <glob>',
      'with --recursive: skip files matching, of those found in folders (repeatable); a file named itself is always taken',
      collect,
    )
    .option('--files-from <file|->', 'read the paths to process from a file, one per line')
    .addOption(new Option('-0, --null', 'with --files-from: paths are separated by NUL (find -print0)'));
}

/** The zod shape of those options. */
export const inputOptionsShape = {
  recursive: z.boolean().default(false),
  include: z.array(z.string()).default([]),
  exclude: z.array(z.string()).default([]),
  filesFrom: z.string().optional(),
  null: z.boolean().default(false),
};

/** Converts parsed input options (and the store's folder, for commands that have one) to core/inputs.ts's form. */
export function toInputOptions(o: {
  recursive: boolean;
  include: string[];
  exclude: string[];
  filesFrom?: string | undefined;
  null: boolean;
  storeDir?: string | undefined;
  storeEntries?: ((name: string) => boolean) | undefined;
}): InputOptions {
  return {
    recursive: o.recursive,
    include: o.include,
    exclude: o.exclude,
    nul: o.null,
    ...(o.filesFrom === undefined ? {} : { filesFrom: o.filesFrom }),
    ...(o.storeDir === undefined ? {} : { storeDir: o.storeDir }),
    ...(o.storeEntries === undefined ? {} : { storeEntries: o.storeEntries }),
  };
}
