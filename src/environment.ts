/**
 * Every environment variable notarize reads, declared once, in groups: the
 * "Environment" section of `notarize --help` is rendered from this list, and
 * README's table says the same (test/cli/environment.test.ts checks both,
 * and fails when code under src/ reads a variable not declared here).
 * The settings' variables come from settings.ts, with their defaults.
 */
import { ALL_SETTINGS } from './settings.js';

/** One line of the list: a variable, or the spellings of one (`https_proxy, HTTPS_PROXY`). */
export interface EnvironmentVariable {
  /** The variables this line is about, the one read first first. */
  names: readonly string[];
  description: string;
  /** Kept out of every output, raw and trimmed (cli.ts). */
  secret?: boolean;
  /** Who reads it when notarize's own code does not (Node.js, os.homedir()). */
  readBy?: string;
}

export interface EnvironmentGroup {
  title: string;
  variables: readonly EnvironmentVariable[];
}

/** The variables notarize reads, grouped as the help shows them. */
export const ENVIRONMENT: readonly EnvironmentGroup[] = [
  {
    title: 'settings: a flag wins over these, these over `notarize config`; empty is unset',
    variables: ALL_SETTINGS.map((s) => ({
      names: [s.env],
      // NOTARIZE_RETRY_DELAY_MS: a variable only, which `notarize config` does not know.
      description: `${s.description} (default ${s.default})${s.storable ? '' : '; this variable only (no flag, no config key)'}`,
    })),
  },
  {
    title: 'credentials and store',
    variables: [
      {
        names: ['NOTARIZE_API_KEY'],
        description:
          'API key: used to log in on the fly when there is no usable token of that key (a token another key stored is not used)',
        secret: true,
      },
      { names: ['NOTARIZE_TOKEN'], description: 'bearer token to use instead of the stored one', secret: true },
      {
        names: ['NOTARIZE_CONFIG_DIR'],
        description:
          'store directory (settings, tokens, pending sessions, ledger); an absolute path: a relative one (or a ~ nothing expanded) is refused (exit 2)',
      },
      {
        names: ['XDG_CONFIG_HOME'],
        description:
          'the store is $XDG_CONFIG_HOME/notarize by default (Linux); a relative path is ignored, as the XDG spec says',
      },
      { names: ['APPDATA'], description: 'the store is %APPDATA%\\notarize by default (Windows)' },
      {
        names: ['HOME', 'USERPROFILE'],
        description:
          'home directory (USERPROFILE on Windows): the default store is under it; an empty or relative one is refused (exit 2), never the current directory',
        readBy: 'os.homedir()',
      },
    ],
  },
  {
    title: 'the sandbox (`notarize sandbox`)',
    variables: [
      // Not a secret: the sandbox prints its key on purpose.
      { names: ['NOTARIZE_SANDBOX_API_KEY'], description: 'the API key the sandbox accepts (default: a new one)' },
      { names: ['NOTARIZE_SANDBOX_FAULTS'], description: 'faults to inject, as with --faults' },
    ],
  },
  {
    title: 'network',
    variables: [
      {
        names: ['https_proxy', 'HTTPS_PROXY'],
        description: 'proxy to reach the service by; never used for a loopback base URL',
      },
      { names: ['http_proxy', 'HTTP_PROXY'], description: 'the proxy when neither https_proxy nor HTTPS_PROXY is set' },
      {
        names: ['no_proxy', 'NO_PROXY'],
        description:
          'hosts reached without a proxy: a comma-separated list, or * (lowercase first; one with no entry, as an empty proxy variable, counts as unset)',
      },
      {
        names: ['NODE_EXTRA_CA_CERTS'],
        description: 'a file of certificates to trust besides the usual ones',
        readBy: 'Node.js',
      },
    ],
  },
  {
    title: 'terminal and CI',
    variables: [
      { names: ['NO_COLOR'], description: 'no colours' },
      {
        names: ['FORCE_COLOR'],
        description:
          'empty, true, 1, 2 or 3: colours even when stdout is not a terminal; 0 or false: no colours, even on a terminal',
      },
      { names: ['TERM'], description: 'dumb: no colours, spinners or progress lines' },
      {
        names: ['CI'],
        description: 'set (but not to empty, 0 or false): never prompt; no spinners or progress lines',
      },
      { names: ['GITHUB_ACTIONS'], description: 'true: ::error annotations for failed documents, and a summary' },
      { names: ['GITHUB_STEP_SUMMARY'], description: 'the file the summary table is appended to' },
      {
        names: ['GITHUB_OUTPUT', 'RUNNER_TEMP'],
        description:
          'the GitHub Action only (action.yml): where its outputs go, and its results file and (unless NOTARIZE_CONFIG_DIR is set) its store',
      },
    ],
  },
];

/** Every declared line, in order. */
export const ENVIRONMENT_VARIABLES: readonly EnvironmentVariable[] = ENVIRONMENT.flatMap((g) => g.variables);

/** The variables holding secrets: scrubbed from every output, raw and trimmed. */
export const SECRET_VARIABLES: readonly string[] = ENVIRONMENT_VARIABLES.filter((v) => v.secret).flatMap(
  (v) => v.names,
);

/** The "Environment" section of `notarize --help`: one aligned line per variable, by group. */
export function environmentHelp(): string {
  const names = (v: EnvironmentVariable) => v.names.join(', ');
  const width = Math.max(...ENVIRONMENT_VARIABLES.map((v) => names(v).length));
  const lines = ['Environment:'];
  for (const group of ENVIRONMENT) {
    lines.push(`  ${group.title}:`);
    for (const v of group.variables) lines.push(`    ${names(v).padEnd(width)}  ${v.description}`);
  }
  return lines.join('\n');
}

/**
 * Whether this runs in CI as the CI variable says. Runners set it to `true`
 * (or `1`, or a name); `CI=false` or `CI=0` is someone saying it is not CI
 * (to get the prompts back in a shell whose profile exports CI), read as
 * ci-info reads it; empty is unset, as every variable here.
 */
export function inCI(env: NodeJS.ProcessEnv): boolean {
  const value = env.CI?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}
