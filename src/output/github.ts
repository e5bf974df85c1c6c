/**
 * GitHub Actions integration (GITHUB_ACTIONS=true): workflow commands, the
 * lines the runner reads on stderr as it does on stdout (so stdout stays pure
 * data, e.g. `--json > results.json`), with outside text escaped for them.
 * What a run's results become there (the step summary, the `::error`
 * annotations) is github-results.ts; this module stays small, as every run
 * loads it before its command (cli.ts, io.ts).
 */
import { forTerminal } from './safe-text.js';

/**
 * Removes the run's secrets from text (IO.redact): every function here
 * takes one and applies it to outside text as it is, before any escaping.
 * Scrubbing the finished line finds nothing: `%` becomes `%25`, `:` `%3A`
 * and `_` `\_` first, and the runner decodes the first two for its log, and
 * its own masking misses the third, so a key in a file name was shown.
 */
export type Redact = (text: string) => string;

/** True when running as a GitHub Actions step. */
export function inGitHubActions(env: NodeJS.ProcessEnv): boolean {
  return env.GITHUB_ACTIONS === 'true';
}

/**
 * A workflow command's message. The runner decodes only %25, %0D and %0A
 * (and, in properties, %3A and %2C), and the log shows the rest as is, ANSI
 * colours included: so outside text is first escaped as for a terminal
 * (safe-text.ts), then %-encoded (forTerminal already leaves no CR or LF:
 * their encoding is kept as the runner's rule, not relied on). A file name
 * that had to be escaped names no file in the repository: its annotation
 * is then shown without a link, which beats a forged one.
 */
export function escapeData(text: string, redact: Redact): string {
  return forTerminal(redact(text)).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

export function escapeProperty(text: string, redact: Redact): string {
  return escapeData(text, redact).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

/** A warning as a workflow command: the runner shows it on the run's page, not only in the log. */
export function warningCommand(text: string, redact: Redact): string {
  return `::warning title=notarize::${escapeData(text, redact)}`;
}

/** An error as a workflow command, its text escaped as data (it may quote an input: no forged command). */
export function errorCommand(text: string, redact: Redact): string {
  return `::error::${escapeData(text, redact)}`;
}
