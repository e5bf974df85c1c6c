/**
 * What commander says of a mistyped top-level command, "(Did you mean X?)",
 * said at every level: `help <typo>`, `<command> help <typo>` and a
 * mistyped subcommand of a command that also runs on its own (`pending drp`);
 * and the word itself quoted only when it cannot be a secret pasted there.
 */
import type { Command } from 'commander';
import { commandPath } from './commands/command.js';

/**
 * " (Did you mean X?)" naming the command of `parent` closest to `word`, as
 * commander says it of a mistyped top-level command; "" when none is close:
 * at most a third of the longer name's letters to change, insert, drop or swap.
 */
function didYouMean(word: string, parent: Command): string {
  let best: { name: string; distance: number } | undefined;
  // The commands its help lists: not the hidden `help` of a command with subcommands (cli.ts).
  for (const name of parent
    .createHelp()
    .visibleCommands(parent)
    .map((c) => c.name())) {
    const distance = editDistance(word, name);
    if (distance * 3 <= Math.max(word.length, name.length) && (best === undefined || distance < best.distance)) {
      best = { name, distance };
    }
  }
  return best ? ` (Did you mean ${best.name}?)` : '';
}

/**
 * " (Did you mean X?)" naming the option of `options` (long names) closest
 * to `flag`, by didYouMean's rule; "" when none is close.
 */
export function closestOption(flag: string, options: readonly string[]): string {
  let best: { name: string; distance: number } | undefined;
  for (const name of options) {
    const distance = editDistance(flag, name);
    if (distance * 3 <= Math.max(flag.length, name.length) && (best === undefined || distance < best.distance)) {
      best = { name, distance };
    }
  }
  return best ? ` (Did you mean ${best.name}?)` : '';
}

/** Optimal string alignment distance: edits turning `a` into `b`, a swap of neighbours counting one. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * "unknown command '<path> <word>' (Did you mean X?)" for `word` met where
 * a command of `parent` goes, `<path>` the command names down to `parent`. The word
 * is quoted when it is close to a command (a typo) or looks like one (a
 * short lowercase word); anything else may be a key pasted in the wrong
 * place, which would land in a CI log: said without it.
 */
export function unknownCommandMessage(word: string, parent: Command): string {
  const path = commandPath(parent).split(' ').slice(1);
  const suggestion = didYouMean(word, parent);
  if (suggestion || /^[a-z][a-z-]{0,23}$/.test(word))
    return `unknown command '${[...path, word].join(' ')}'${suggestion}`;
  return path.length === 0 ? 'unknown command' : `unknown command after '${path.join(' ')}'`;
}
