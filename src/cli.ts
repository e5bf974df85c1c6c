/**
 * The commander program and `main()`, the one place where errors become exit
 * codes and messages. Commands are loaded lazily from the registry, so
 * `--version` and `--help` load almost nothing.
 */
import { Command, CommanderError, Option } from 'commander';
import { commandPath } from './commands/command.js';
import { closestOption, unknownCommandMessage } from './did-you-mean.js';
import { COMMANDS } from './commands/registry.js';
import type { Context, GlobalOptions, StoreModule } from './context.js';
import { cleanSecret } from './secrets.js';
import { environmentHelp, inCI, SECRET_VARIABLES } from './environment.js';
import { errorJson, EXIT, EXIT_CODE_HELP, NotarizeError, UsageError, type ExitCode } from './errors.js';
import { loadingModule } from './fd-shortage.js';
import { IO, withinWidth, type IOOptions, type Sink } from './output/io.js';
import { RETRY_HELP } from './settings.js';
import { inGitHubActions } from './output/github.js';
import { forTerminal } from './output/safe-text.js';
export { exitOnSignals, keepFileSizeSignalHarmless } from './interrupt.js';
export { deferWasmTierUp } from './v8-flags.js';
import { clearOnInterrupt, flushOnInterrupt } from './interrupt.js';
import { VERSION } from './version.js';

const TOP_EXAMPLES = `Examples:
  notarize sandbox &                                  # a local emulator, no account needed: set the
                                                      # NOTARIZE_BASE_URL and NOTARIZE_API_KEY it prints
  notarize register contract.pdf                      # hash, register, complete, print the record
  notarize verify contract.pdf                        # check against the local ledger, offline
  # CI: register every artifact; exit 4 means "transient, run again later"
  NOTARIZE_API_KEY=$KEY notarize register -r dist --json > notarizations.json
`;

export interface MainOptions {
  argv?: string[];
  env?: NodeJS.ProcessEnv;
  io?: IO;
}

/**
 * Whether tables are coloured. NO_COLOR (any value but empty) turns colours
 * off; FORCE_COLOR is read as chalk's supports-color reads it: `0` or
 * `false` turns them off, even on a terminal; empty, `true` or a level
 * (`1`, `2`, `3`) turns them on, even in a pipe; any other value is not
 * read. Otherwise, colours on a terminal that is not TERM=dumb.
 */
export function colourWanted(env: NodeJS.ProcessEnv, isTTY: boolean): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  const force = env.FORCE_COLOR;
  if (force === 'false' || (force !== undefined && /^\s*0+\s*$/.test(force))) return false;
  if (force === '' || force === 'true' || (force !== undefined && /^\s*[1-9]\d*\s*$/.test(force))) return true;
  return isTTY && env.TERM !== 'dumb';
}

/**
 * Write errors that say the reader went away, not that output was lost: a
 * pipe (EPIPE) or a socket (ECONNRESET, ENOTCONN) closed by a reader done
 * with it, and the writes queued behind such an error (ERR_STREAM_DESTROYED).
 */
const READER_GONE = new Set(['EPIPE', 'ECONNRESET', 'ENOTCONN', 'ERR_STREAM_DESTROYED']);

/**
 * A stream of this process that a reader may close early (`notarize hash -r .
 * | head -1`): once a write fails, further writes are dropped instead of
 * crashing the process with an unhandled 'error' event. The run goes on, so
 * a registration under way still ends and is saved. A reader gone
 * (READER_GONE) read what it wanted; any other error (a full disk, an I/O
 * error) lost output, which `settled` gives main() to report (exit 1).
 */
function closableSink(stream: NodeJS.WriteStream): Sink {
  let gone = false;
  let wrote = false;
  let failure: Error | undefined;
  const lost = (error: NodeJS.ErrnoException | null | undefined): void => {
    if (error && !READER_GONE.has(error.code ?? '')) failure ??= error;
  };
  stream.on('error', (error: NodeJS.ErrnoException) => {
    gone = true;
    lost(error);
  });
  return {
    write: (text: string) => {
      if (gone) return true;
      wrote = true;
      return stream.write(text);
    },
    once: (event, listener) => stream.once(event, listener),
    off: (event, listener) => stream.off(event, listener),
    // An empty write's callback comes after those of every write before it, an error's included.
    // Nothing written, nothing lost: /dev/full refuses even the empty write (a `config set` that worked was exit 1).
    settled: () =>
      gone || !wrote
        ? Promise.resolve(failure)
        : new Promise((resolve) =>
            stream.write('', (error) => {
              lost(error);
              resolve(failure);
            }),
          ),
  };
}

/**
 * Makes `stream.columns` read 80 where the terminal says 0 (a pty given no
 * size: \`script\`, \`docker exec -t\`, \`ssh -tt\` from a script), now and after
 * a resize. ora divides a line's width by it to know how many lines to
 * clear: with 0, it cleared Infinity lines, in a loop that held the event
 * loop for good (no signal answered, output without end).
 */
function atLeastOneColumn(stream: NodeJS.WriteStream): void {
  let columns = stream.columns;
  Object.defineProperty(stream, 'columns', {
    configurable: true,
    enumerable: true,
    get: () => (columns > 0 ? columns : 80),
    set: (value: number) => (columns = value),
  });
}

/** The width of stderr's terminal; 0 or none: a pty given no size says nothing of its width. */
function stderrColumns(): number | undefined {
  return process.stderr.columns || undefined;
}

/** The IO object over this process's streams. */
export function processIO(env: NodeJS.ProcessEnv, streams: { stdout?: Sink } = {}): IO {
  const options: IOOptions = {
    stdout: streams.stdout ?? closableSink(process.stdout),
    stderr: closableSink(process.stderr),
    stdin: process.stdin,
    stdinIsTTY: Boolean(process.stdin.isTTY),
    // Lines drawn for the while: none in CI, and none on a dumb terminal (no erasing a line there).
    stderrIsTTY: Boolean(process.stderr.isTTY) && !inCI(env) && env.TERM !== 'dumb',
    stdoutIsTTY: Boolean(process.stdout.isTTY),
    colour: colourWanted(env, Boolean(process.stdout.isTTY)),
    warningAnnotations: inGitHubActions(env),
    stderrColumns,
    startSpinner: (text) => {
      // ora is loaded only when a spinner is really shown, on a terminal.
      let spinner: { text: string; stop(): void } | undefined;
      let stopped = false;
      // The step said last: one said while ora still loads is the one its first frame shows.
      let latest = text;
      // After its frame and a space: one row, as a progress line (withinWidth).
      const fitted = (line: string) => withinWidth(line, stderrColumns(), 2);
      const stop = () => {
        stopped = true;
        spinner?.stop();
      };
      const forgetClear = clearOnInterrupt(stop);
      void import('ora')
        .then(({ default: ora }) => {
          if (stopped) return;
          atLeastOneColumn(process.stderr);
          spinner = ora({
            text: fitted(latest),
            stream: process.stderr,
            // ora's default puts standard input in raw mode to swallow keys, which turns off the
            // terminal's own Ctrl-C, and (stdin-discarder 0.3) never reads the ^C it promises to pass on:
            // a Ctrl-C at "requesting" was ignored, and the paid step sent. The terminal keeps its Ctrl-C.
            discardStdin: false,
            // Drawn once started: stderrIsTTY decided that (ora's own test reads CI=false as CI, then prints '- text').
            isEnabled: true,
            // Its colour follows NO_COLOR and FORCE_COLOR as notarize's own do (chalk's detection did not).
            color: colourWanted(env, true) ? 'cyan' : false,
          }).start();
        })
        // ora not loaded (its files cannot be read for want of a descriptor): no spinner, the run goes on;
        // a rejection left unhandled would end the process mid-run.
        .catch(() => undefined);
      return {
        update: (next) => {
          latest = next;
          if (spinner) spinner.text = fitted(next);
        },
        stop: () => {
          forgetClear();
          stop();
        },
      };
    },
  };
  return new IO(options);
}

/** What main() keeps across the parse: the Context class once loaded, and the one context. */
interface RunState {
  ContextClass?: typeof Context;
  storeModule?: StoreModule | undefined;
  context?: Context;
  /** The command whose parse failed (commander's errors do not say), so the hint can name it. */
  failed?: Command;
  /** The command whose action ran (its options parsed). */
  ran?: Command;
  /** Whether errors go out as JSON (main's reading of the command line), for the help commander writes on its own. */
  errorsAsJson?: () => boolean;
  /**
   * Its options parsed, the command's data is JSON (`--output json`): so are its errors, as README
   * says --json is --output json. Set before the command's own checks of its flags (`-j 0`).
   */
  outputJson?: boolean;
}

function buildProgram(io: IO, env: NodeJS.ProcessEnv, state: RunState): Command {
  const program = new Command('notarize');
  const context = () => {
    if (!state.context) {
      // Loaded by the preSubcommand hook below, before any action runs.
      const ContextClass = state.ContextClass!;
      const globals = program.opts<GlobalOptions>();
      io.quiet = globals.quiet ?? false;
      io.verbose = globals.verbose ?? false;
      state.context = new ContextClass(io, env, globals, state.storeModule);
    }
    return state.context;
  };
  program
    .description(
      'Notarize documents: hash locally, register the SHA-256 on the Algorand blockchain, keep a local ledger.',
    )
    .version(VERSION, '-V, --version')
    .option(
      '--base-url <url>',
      'service base URL (default: NOTARIZE_BASE_URL, the stored setting, or https://app.dedit.io)',
    )
    .option('--json', 'print data as JSON (exactly what the service returned) and errors as JSON on stderr')
    .option('-q, --quiet', 'no messages on stderr besides warnings and errors')
    .option('--verbose', 'log each request (method, URL, status, time; never secrets) and show stack traces')
    .option(
      '--timeout <ms>',
      'milliseconds each request may take (default 30000), and making its connection; through a proxy, opening its tunnel and the TLS handshake too, each',
    )
    .option(
      '--retries <n>',
      'retries of a retryable request (default 3); after two requests in a row of one kind (login, request step, forfait) fail for good (no answer, 5xx, 408, 429 or unreadable), one of that kind at a time is let through to see whether the service is back, a request waiting to retry is not sent again, and the others wait for it, or up to 10 × NOTARIZE_RETRY_DELAY_MS (5 s by default), then fail at once (exit 4) until one gets through',
    )
    .addHelpText('after', `\n${RETRY_HELP}\n\n${EXIT_CODE_HELP}\n\n${environmentHelp()}\n\n${TOP_EXAMPLES}`)
    .showSuggestionAfterError()
    // Its options before the command only; after it, the command's copies of them (acceptGlobalOptions).
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.data(text.replace(/\n$/, '')),
      // The help of a command given no subcommand (`notarize --json`): a script that asked for JSON reads
      // stderr as JSON, and report() writes a JSON error instead.
      writeErr: (text) => {
        if (state.errorsAsJson?.() !== true) io.error(text.replace(/\n$/, ''));
      },
      outputError: () => {
        // main() prints commander's errors, like every other error.
      },
    });
  for (const entry of COMMANDS) {
    program.command(entry.name).description(entry.summary);
  }
  // -V after a command (`notarize hash -V`), as the program's own prints it: the version, exit 0.
  const showVersion = (): never => {
    io.data(VERSION);
    throw new CommanderError(0, 'commander.version', VERSION);
  };
  const configured = new WeakSet<Command>();
  /** Loads a command's module and lets it add its arguments, options and subcommands; once per command. */
  const load = async (subcommand: Command): Promise<void> => {
    // Only the program's own commands come from the registry (`config list` is not `list`).
    const entry = subcommand.parent === program ? COMMANDS.find((c) => c.name === subcommand.name()) : undefined;
    if (!entry || configured.has(subcommand)) return;
    configured.add(subcommand);
    // The context (store, settings, output) is loaded only for a command that
    // runs, never for --version or --help.
    const [module, { Context: ContextClass }, storeModule] = await loadingModule(() =>
      Promise.all([
        entry.load(),
        import('./context.js'),
        entry.usesStore === false ? undefined : import('./store/store.js'),
      ]),
    );
    state.ContextClass = ContextClass;
    state.storeModule = storeModule;
    module.configure(subcommand, context, COMMANDS);
    for (const command of commandTree(subcommand)) {
      acceptGlobalOptions(command, program, showVersion);
      // `config help set`, as commander's own help command of a command with subcommands is called;
      // commander's prints the whole help for a name it does not know, without naming it.
      if (command.commands.length > 0 && command.name() !== 'help') {
        command.helpCommand(false);
        const help = command
          .command('help [command...]', { hidden: true })
          .description(
            `show the help of a command of ${commandPath(command)}: \`${commandPath(command)} help <command>\``,
          )
          .action((names: string[]) => showHelp(command, names));
        acceptGlobalOptions(help, program, showVersion);
      }
    }
  };
  // commander's own `help <command>` shows the command before its module has
  // configured it (an empty command), and only one level deep; this one
  // loads the command first and walks subcommands (`help config set`), so it
  // prints exactly what `<command> --help` prints.
  const showHelp = async (from: Command, names: string[]): Promise<void> => {
    let target = from;
    for (const name of names) {
      const next = target.commands.find((c) => c.name() === name || c.aliases().includes(name));
      if (!next) {
        throw new UsageError(unknownCommandMessage(name, target), {
          hint: `see \`${commandPath(target)} --help\``,
        });
      }
      await load(next);
      target = next;
    }
    target.outputHelp();
  };
  program.helpCommand(false);
  const help = program
    .command('help [command...]')
    .description('show the help of a command: `help <command>` is `<command> --help`')
    .action((names: string[]) => showHelp(program, names));
  acceptGlobalOptions(help, program, showVersion);
  program.hook('preSubcommand', async (_program, subcommand) => {
    await load(subcommand);
    // The words after the command's name (commander set them before dispatching to it).
    refuseUnknownCommandWithHelp(subcommand, program.args.slice(program.args.indexOf(subcommand.name()) + 1));
  });
  program.hook('preAction', (_program, action) => {
    // Before the command's own checks of its flags (`-j 0`), which fail before it chooses its output.
    state.outputJson = outputIsFormat(action) && action.getOptionValue('output') === 'json';
    state.ran = action;
    refuseUndecodedEnvironment(env);
    refuseUndecoded(action);
    takeGlobalOptions(action, program);
  });
  return program;
}

/**
 * The global options (--json, --base-url, -q...) after a command's name
 * (`register a.txt --json`), where only the command parses them. The program
 * reads its options before its command only (enablePositionalOptions): when
 * it searched the whole line, it took a command's option's value for one of
 * its own (`--description --base-url=https://elsewhere`, r117: the key sent
 * there, in the Action, whose description is anyone's text). So each command
 * has a hidden copy of each, which takeGlobalOptions hands to the program;
 * a bundle of a command's short flags with -q (`-rq`) is split there too.
 */
function acceptGlobalOptions(command: Command, program: Command, showVersion: () => never): void {
  for (const global of program.options) {
    const taken = command.options.some(
      (option) => option.long === global.long || (global.short !== undefined && option.short === global.short),
    );
    if (taken) continue;
    command.addOption(new Option(global.flags, global.description).hideHelp());
    if (global.attributeName() === 'version') command.on('option:version', showVersion);
  }
}

/** The global options given after the command's name (acceptGlobalOptions), as the program's: the last given wins. */
function takeGlobalOptions(action: Command, program: Command): void {
  const chain: Command[] = [];
  for (let at: Command | null = action; at && at !== program; at = at.parent) chain.unshift(at);
  for (const global of program.options) {
    const key = global.attributeName();
    if (key === 'version') continue;
    for (const command of chain) {
      if (command.getOptionValueSource(key) !== 'cli') continue;
      program.setOptionValueWithSource(key, command.getOptionValue(key), 'cli');
    }
  }
}

/** `command` and every command below it. */
function commandTree(command: Command): Command[] {
  return [command, ...command.commands.flatMap(commandTree)];
}

/** The commands whose arguments are documents: one holding U+FFFD fails on its own (core/inputs.ts). */
const DOCUMENT_COMMANDS = new Set(['register', 'hash', 'verify']);

/**
 * Node decodes the command line as UTF-8, each byte that is not turned into
 * U+FFFD: a path given so would name another file (one whose name really
 * holds U+FFFD), or none. So an option's value or an argument holding U+FFFD
 * is refused before the command runs (--files-from, --receipt-dir,
 * --receipt, -o, a hash or file of show): nothing tells a real one from a
 * decoding failure. Not a description (core/description.ts refuses it, and
 * says more), nor the documents of register, hash and verify, each of which
 * fails on its own as any unreadable document does. An option given an
 * empty value is refused here too (emptyValue).
 */
function refuseUndecoded(action: Command): void {
  for (let command: Command | null = action; command; command = command.parent) {
    for (const [key, value] of Object.entries(command.opts())) {
      if (key === 'description') continue;
      const values = Array.isArray(value) ? value : [value];
      const flag = command.options.find((option) => option.attributeName() === key)?.long ?? key;
      if (values.includes('')) throw emptyValue(flag);
      const held = values.find((v): v is string => typeof v === 'string' && v.includes('\uFFFD'));
      // A base URL may carry a password (refused later, unshown): never echoed.
      if (held !== undefined) throw undecoded(key === 'baseUrl' ? `the value of ${flag}` : `'${flag} ${held}'`);
    }
  }
  if (DOCUMENT_COMMANDS.has(action.name())) return;
  const held = action.args.find((arg) => arg.includes('\uFFFD'));
  // `config set` takes the base URL, and may take a secret one day: its values are not echoed.
  const config = commandPath(action).startsWith('notarize config');
  if (held !== undefined) throw undecoded(config ? `an argument of \`${commandPath(action)}\`` : `'${held}'`);
}

/**
 * The environment is decoded as the command line is: a NOTARIZE_CONFIG_DIR
 * whose bytes are not UTF-8 named another folder (created, used) with U+FFFD
 * in its name, and a base URL so decoded another host. So the variables
 * notarize reads (NOTARIZE_*, and what places the store when
 * NOTARIZE_CONFIG_DIR does not) are refused as arguments are; by name only,
 * as they may hold a URL's password. The secrets are not checked: a key
 * so mangled is refused by the service, and is never printed.
 */
function refuseUndecodedEnvironment(env: NodeJS.ProcessEnv): void {
  const read = Object.keys(env).filter((name) => name.startsWith('NOTARIZE_') && !SECRET_VARIABLES.includes(name));
  if (!env.NOTARIZE_CONFIG_DIR) read.push('XDG_CONFIG_HOME', 'APPDATA');
  if (!env.NOTARIZE_CONFIG_DIR && !env.XDG_CONFIG_HOME) read.push('HOME', 'USERPROFILE');
  const held = read.find((name) => env[name]?.includes('\uFFFD'));
  if (held !== undefined) throw undecoded(`the variable ${held}`, 'an environment');
}

/**
 * An option given an empty value: in a script, an unset variable
 * (`--receipt-dir "$RECEIPTS"`), which would otherwise stand for the
 * current directory, or for nothing, and be used so.
 */
function emptyValue(flag: string): UsageError {
  return new UsageError(`${flag} is empty`, {
    code: 'empty_option',
    hint: `give ${flag} a value (is a variable unset?), or leave it out`,
  });
}

function undecoded(given: string, where = 'a command line'): UsageError {
  return new UsageError(
    `${given} holds U+FFFD, which is what bytes of ${where} that are not UTF-8 become: ` +
      'notarize cannot tell what was meant',
    {
      code: 'argument_not_utf8',
      hint: 'give it again in UTF-8: a file or folder so named must be renamed (a document can also be listed in --files-from, read strictly)',
    },
  );
}

/**
 * Makes every command below `command` throw its parse errors instead of
 * exiting, noting which command failed so the hint can name it.
 */
function applyExitOverride(command: Command, state: RunState): void {
  for (const sub of command.commands) {
    sub.exitOverride((error) => {
      state.failed = sub;
      throw error;
    });
    applyExitOverride(sub, state);
  }
}

/**
 * The error main() reports for what was thrown: commander's parse errors are
 * usage errors naming the command's help; anything unknown is "unexpected".
 */
function asReported(error: unknown, failed: Command | undefined): NotarizeError {
  if (error instanceof NotarizeError) return error;
  if (error instanceof CommanderError) {
    const help = `see \`${failed ? commandPath(failed) : 'notarize'} --help\``;
    const unknown = unknownOptionName(error);
    if (unknown !== undefined) {
      const { name } = unknown;
      const suggestion = unknown.suggestion || globalSuggestion(name, failed);
      // `--quiet=x`: a known flag given a value it does not take, not an unknown option.
      const known = isOptionOf(failed, name);
      const message = known ? `option '${name}' takes no value` : `unknown option '${name}'${suggestion}`;
      return new UsageError(message, {
        hint: `${help}${beforeCommand(failed, known)}; what followed ${name} is not shown: it may be a secret, and notarize never takes one on the command line`,
      });
    }
    // `pending drp`: a word where a command of its own was meant, not an operand too many.
    const word = failed?.args[0];
    if (error.code === 'commander.excessArguments' && failed?.commands.length && word !== undefined) {
      return new UsageError(unknownCommandMessage(word, failed), { hint: help });
    }
    // `notarize <word>`, `config <word>`: commander quotes the word, which may be a key pasted there.
    const unknownCommand = /^error: unknown command '([\s\S]*)'/.exec(error.message);
    if (error.code === 'commander.unknownCommand' && unknownCommand && failed) {
      return new UsageError(unknownCommandMessage(unknownCommand[1]!, failed), { hint: help });
    }
    let message = error.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
    // `hash a.txt --jso`: commander suggests among the command's own options only.
    const bare = /^unknown option '(--[^'=]+)'$/.exec(message);
    if (error.code === 'commander.unknownOption' && bare) message += globalSuggestion(bare[1]!, failed);
    const misplaced = error.code === 'commander.unknownOption' ? beforeCommand(failed, false) : '';
    return new UsageError(message, { hint: `${help}${misplaced}` });
  }
  const message = `unexpected error: ${(error as Error)?.message ?? String(error)}`;
  return new NotarizeError('unexpected', EXIT.failed, message, { hint: 'run again with --verbose for details' });
}

/**
 * " (Did you mean --json?)" for a long option unknown after a command that
 * is close to a global one: commander suggests among the command's visible
 * options only, and the global ones are hidden copies there
 * (acceptGlobalOptions). "" otherwise.
 */
function globalSuggestion(name: string, failed: Command | undefined): string {
  if (!name.startsWith('--') || failed?.parent == null) return '';
  let program: Command = failed;
  while (program.parent) program = program.parent;
  const longs = program.options.flatMap((option) => (option.long === undefined ? [] : [option.long]));
  return closestOption(name, longs);
}

/**
 * For an option unknown before any command (`notarize --output ndjson
 * register ...`): the program's help lists only the global options, and the
 * one meant is likely a command's, which goes after the command.
 */
function beforeCommand(failed: Command | undefined, known: boolean): string {
  return failed?.parent === null && !known
    ? "; a command's own options go after the command (`notarize <command> --help`)"
    : '';
}

/** Whether `name` (`--quiet`, `-q`) is an option of `command` or of a command it belongs to. */
function isOptionOf(command: Command | undefined, name: string): boolean {
  for (let at = command; at; at = at.parent ?? undefined) {
    // Its help lists -h, --help too, which commander keeps apart from .options.
    const options = [...at.options, ...at.createHelp().visibleOptions(at)];
    if (options.some((option) => option.long === name || option.short === name)) return true;
  }
  return false;
}

/**
 * The name alone of an unknown option commander quotes with more than its
 * name (`--api-key=<key>`, `-k<key>`): what was typed with it may be a secret
 * (a key typed into an option that does not exist), and is never echoed;
 * commander's suggestion, which names one of notarize's own options, is kept.
 * Undefined for any other error, and for an option quoted as its name alone
 * (`--bogus`), whose message, with the suggestion, is kept as it is.
 */
function unknownOptionName(error: CommanderError): { name: string; suggestion: string } | undefined {
  if (error.code !== 'commander.unknownOption') return undefined;
  const match = /^error: unknown option '([\s\S]*)'(?:\n(\(Did you mean (?:--?[A-Za-z0-9-]+)\?\)))?$/.exec(
    error.message,
  );
  // A message of another shape (another commander): nothing of it is quoted.
  if (match === null) return { name: 'an option', suggestion: '' };
  const flag = match[1]!;
  const name = flag.startsWith('--') ? flag.split('=')[0]! : flag.slice(0, 2);
  // Commander's suggestion names one of notarize's own options: kept.
  return name === flag ? undefined : { name, suggestion: match[2] ? ` ${match[2]}` : '' };
}

/**
 * A stack trace for --verbose: its first line (the error's name and
 * message, which may quote a file name or the service's words) on one
 * line, line breaks escaped as in any message, then the frames. A raw line
 * break there let a file name start a line of its own, which a GitHub
 * runner reads as a workflow command (`::add-mask::`, `::stop-commands::`).
 */
function stackTrace(error: Error, stack: string): string {
  // V8 starts a stack with the error's own text, which may hold lines looking like frames: it is cut
  // off whole, never searched for the first frame. A stack of another form is shown as one line.
  const header = String(error);
  if (!stack.startsWith(`${header}\n`)) return forTerminal(stack);
  const frames = stack.slice(header.length + 1).split('\n');
  return [forTerminal(header), ...frames.map(forTerminal)].join('\n');
}

/** The usage error of `notarize --json` or `config --json` with no command: the commands it could have been. */
function commandNeeded(command: Command | undefined): UsageError {
  const path = command ? commandPath(command) : 'notarize';
  const names = command
    ? command
        .createHelp()
        .visibleCommands(command)
        .map((sub) => sub.name())
    : [];
  return new UsageError(`${path} needs a command: ${names.join(', ')}`, {
    hint: `see \`${path} --help\``,
  });
}

/** Prints an error the documented way and returns its exit code. */
function report(io: IO, error: unknown, json: boolean, failed: Command | undefined): ExitCode {
  let reported: NotarizeError | undefined;
  if (error instanceof CommanderError) {
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
    if (error.code === 'commander.help') {
      if (error.exitCode === 0) return EXIT.ok;
      // Help shown because no (sub)command was given (`notarize`, `notarize config`): it went to
      // stderr and nothing ran, a usage error; with JSON errors asked for it was not written
      // (configureOutput), and a JSON error says it.
      if (!json) return EXIT.usage;
      reported = commandNeeded(failed);
    }
  }
  reported ??= asReported(error, failed);
  const { message, hint } = reported;
  if (json) {
    io.error(JSON.stringify({ error: errorJson(reported) }));
  } else {
    // Messages embed file names and the service's words: one line, nothing the terminal would act on.
    // (With --json, JSON.stringify escapes line breaks and io.error the rest, as JSON escapes.)
    io.error(`notarize: ${forTerminal(message)}${hint ? ` (${forTerminal(hint)})` : ''}`);
  }
  // A parse error's stack says nothing about the user's problem.
  if (io.verbose && !(error instanceof CommanderError) && error instanceof Error && error.stack) {
    io.error(stackTrace(error, error.stack));
  }
  return reported.exitCode;
}

/**
 * Registers with `io` the secrets of `env` it scrubs from everything written
 * (IO.addSecret): the secret variables, raw and trimmed (notarize uses them
 * trimmed, see secrets.ts). (A proxy URL's password is the Context's to add.)
 */
export function addEnvironmentSecrets(io: IO, env: NodeJS.ProcessEnv): void {
  for (const name of SECRET_VARIABLES) {
    io.addSecret(env[name], name);
    io.addSecret(cleanSecret(env[name]), name);
  }
}

/** Runs the CLI and returns the exit code; never throws, never exits the process. */
export async function main(options: MainOptions = {}): Promise<ExitCode> {
  const env = options.env ?? process.env;
  const io = options.io ?? processIO(env);
  // Before the parse: its errors quote the arguments, and a key typed as an option
  // (`--api-key=...`, which no command takes) is scrubbed from them like any output.
  addEnvironmentSecrets(io, env);
  const argv = options.argv ?? process.argv.slice(2);
  const state: RunState = {};
  const program = buildProgram(io, env, state);
  program.hook('preSubcommand', () => applyExitOverride(program, state));
  const forgetFlush = flushOnInterrupt(() => io.flush());
  // As parsed once a command runs; before that (the parse failed), as the words before any `--` say.
  const json = () =>
    state.outputJson === true ||
    (state.context
      ? state.context.globals.json === true
      : beforeOperands(argv).some(asksForJson(outputIsFormat(state.failed))));
  state.errorsAsJson = json;
  let code: ExitCode;
  try {
    refuseUnknownCommandWithHelp(program, argv);
    await program.parseAsync(argv, { from: 'user' });
    code = EXIT.ok;
  } catch (error) {
    if (state.context?.globals.verbose ?? beforeOperands(argv).includes('--verbose')) io.verbose = true;
    // An error before any command is the program's: its options are the ones to look among.
    code = report(io, error, json(), state.failed ?? program);
  } finally {
    // Lines queued by io.dataSoon: written before the exit code is known to the caller.
    forgetFlush();
    io.flush();
    await state.context?.close();
  }
  // Output that never reached its file (a full disk): a script must not read exit 0 and an empty file.
  const failure = await io.outputFailure();
  if (failure === undefined) return code;
  // The run's own failure keeps its code (README), and the error line says that code too.
  return report(io, outputLost(failure, code, state.ran), json(), undefined);
}

/**
 * `notarize regster --help`, `config sett -h`: commander shows the parent's
 * help for a help flag before it looks at the word, and exits 0, as if the
 * command existed; a script checking `notarize <command> --help` for a
 * command this notarize lacks read success. The word is refused as
 * `help regster` refuses it (did-you-mean, exit 2). Other words are
 * commander's to judge, as without a help flag.
 */
function refuseUnknownCommandWithHelp(parent: Command, words: readonly string[]): void {
  if (parent.commands.length === 0) return;
  const before = beforeOperands(words);
  if (!before.includes('--help') && !before.includes('-h')) return;
  const takesValue = (word: string) =>
    parent.options.some(
      (option) => (option.required || option.optional) && (option.long === word || option.short === word),
    );
  for (let i = 0; i < before.length; i++) {
    const word = before[i]!;
    if (word.startsWith('-')) {
      if (takesValue(word)) i++;
      continue;
    }
    if (parent.commands.some((sub) => sub.name() === word || sub.aliases().includes(word))) return;
    throw new UsageError(unknownCommandMessage(word, parent), { hint: `see \`${commandPath(parent)} --help\`` });
  }
}

/** The words of a command line before `--`, after which every word is an operand (`hash -- --json` names a file). */
function beforeOperands(argv: readonly string[]): readonly string[] {
  const end = argv.indexOf('--');
  return end === -1 ? argv : argv.slice(0, end);
}

/**
 * Whether the word at `i` asks for JSON: --json, or --output json (README: --json is --output json)
 * where the command's --output is a format (`formatOutput`), not a file (`receipt --output <file>`).
 */
function asksForJson(formatOutput: boolean): (word: string, i: number, words: readonly string[]) => boolean {
  return (word, i, words) =>
    word === '--json' ||
    (formatOutput && (word === '--output=json' || (word === '--output' && words[i + 1] === 'json')));
}

/** Whether `command`'s --output chooses the output's format (commands/options.ts outputOption). */
function outputIsFormat(command: Command | undefined): boolean {
  return command?.options.some((option) => option.long === '--output' && option.argChoices?.includes('json')) ?? true;
}

/** The error main() reports when stdout could not be written: exit 1, or the code the run failed with. */
function outputLost(failure: Error, runCode: ExitCode, ran: Command | undefined): NotarizeError {
  const reason = (failure as NodeJS.ErrnoException).code ?? failure.message;
  const exitCode = runCode === EXIT.ok ? EXIT.failed : runCode;
  // Only a command that registers has registrations to point at (`hash` or `login` has none).
  const registers = ran !== undefined && REGISTERING.has(ran.name()) && ran.parent?.parent === null;
  const ledger = registers ? ' (a registration made is in the ledger: `notarize show`)' : '';
  return new NotarizeError('output_not_written', exitCode, `could not write the output: ${reason}`, {
    hint: `it is incomplete; free some space or write it elsewhere, and run the command again${ledger}`,
    cause: failure,
  });
}

/** The commands that register (and keep what they registered in the ledger). */
const REGISTERING = new Set(['register', 'complete']);
