/**
 * The shape of a command module and of its entry in the registry. Apart from
 * the registry (registry.ts), which lists the entries and loads the modules:
 * a module that describes the others (completion) is handed the list and
 * needs only these types, so no command module imports the registry that
 * loads it, and the import graph has no cycle (scripts/check-import-cycles.js).
 */
import type { Command } from 'commander';
import type { Context } from '../context.js';

/** What a command module exports. */
export interface CommandModule {
  /**
   * Adds the command's arguments, options, help examples and action.
   * `commands` is the registry's list, for a command that describes the
   * others (completion): handed in, so no command module imports the registry.
   */
  configure(command: Command, context: () => Context, commands: readonly CommandEntry[]): void;
}

/** One command of the registry: its name, its line in `notarize --help`, and how to load its module. */
export interface CommandEntry {
  name: string;
  summary: string;
  load: () => Promise<CommandModule>;
  /** False for commands that never open the store, which then start without loading it. */
  usesStore?: false;
}

/** The command line that names `command`, e.g. "notarize config set", for hints. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}
