/**
 * What SIGINT and SIGTERM do: end the process at once, in whatever state,
 * with one line on stderr and exit 130 (SIGINT) or 143 (SIGTERM), as a shell
 * reports a process killed by them.
 *
 * Node's default (no listener) would end it too, but silently, with no word
 * of the session kept or the lock held, and only while no other module has
 * added a listener (one that did would leave a signal doing nothing). So the
 * entry point (bin/notarize.js) installs these handlers first, and they exit
 * themselves. They can run only while
 * the main thread is free, which is why every open and read of an input or
 * store file is non-blocking (core/hash.ts, store/files.ts readPrivateFile): a blocking
 * read of a FIFO could never be interrupted.
 *
 * The flow (core/notarize.ts) tells this module what is under way, so that
 * the line can say which session is kept and how to finish it, and so that
 * its lock is released rather than left for the next run to find stale.
 * process.exit() then ends everything else: worker threads, sockets, timers.
 * Store writes are atomic (temporary file, then rename; a file whose name
 * must be free is hard-linked in place), so a write cut off by the exit
 * leaves the old file or the new one, never a torn one (on a file system
 * without hard links, such a file is written in place: store/files.ts).
 *
 * One wait, bounded: a completion (forfait) already sent may be paid for
 * whether or not its answer arrives, and once it is, a re-run only hears
 * "already registered", without the record. So when the signal finds
 * completions in flight, nothing more is sent (`beforeSending`) and the exit
 * waits up to COMPLETION_GRACE_MS for their answers to be recorded. That is
 * 5 s: an answer lost costs a record and its receipts for good, and CI
 * cancellations leave that much (GitHub Actions sends SIGINT, then SIGTERM
 * 7.5 s later; `docker stop` waits 10 s before SIGKILL); a second signal,
 * as the line says, stops the wait at once. A 1 s wait lost the record of
 * every completion answered later than that.
 */
import { writeSync } from 'node:fs';

const EXIT_ON: Record<'SIGINT' | 'SIGTERM', number> = { SIGINT: 130, SIGTERM: 143 };

/** A registration under way: its hash, whether its session (then its record) is on disk, and how to release its lock. */
interface Underway {
  hash: string;
  sessionSaved: boolean;
  /** Completed, its record saved. */
  recordSaved: boolean;
  /** Completed, with its custody metadata not yet taken by the service. */
  metadataOwed: boolean;
  release: () => void;
}

const underway = new Set<Underway>();
/** Hashes let go of with their custody metadata unsent (a signal cut the wait for its answer): for the line. */
const metadataUnsent = new Set<string>();
/** What to say of a session kept, by hash, instead of `notarize complete <hash>` alone (sessionNote). */
const sessionNotes = new Map<string, string>();
/** Completions sent whose answer is not yet recorded, each of its hash. */
const completing = new Set<{ hash: string }>();
/**
 * Registrations completed (or being completed) whose result and receipt are
 * not yet out, each with what it still owes for the line, if it says
 * (owingResult).
 */
const owed = new Map<object, Owing | undefined>();
/** Set once a signal is being handled: nothing more is sent. */
let stopping = false;
/** Called when the last completion in flight is recorded, while a signal waits for it. */
let onCompletionsRecorded: (() => void) | undefined;
/** Settles once a signal is being handled (whenStopping). */
let stoppingNow: Promise<void> | undefined;
let nowStopping: (() => void) | undefined;

/**
 * Resolves once a signal is being handled: what waits for an answer that
 * matters less than the exit's results (custody metadata, sent after the
 * record is saved) stops waiting, so the record's result and receipt are
 * written within the grace period. One promise for the process.
 */
export function whenStopping(): Promise<void> {
  if (stopping) return Promise.resolve();
  stoppingNow ??= new Promise<void>((resolve) => (nowStopping = resolve));
  return stoppingNow;
}

/** How long a signal waits for completions already sent (see the module comment). */
export const COMPLETION_GRACE_MS = 5000;

/**
 * Tells this module that a completion (forfait) of `hash` is being sent;
 * call the function it returns once its answer is recorded, or it failed.
 */
export function sendingCompletion(hash: string): () => void {
  const entry = { hash };
  completing.add(entry);
  return letGo(() => completing.delete(entry));
}

/**
 * What is owed of a registration's results, for the line if a signal's
 * grace runs out before it is out: a clause such as "the receipts of 3 of 9
 * documents under a Merkle root are not written: run the same command again
 * to write them", or undefined once nothing is owed that a re-run gives.
 */
export type Owing = () => string | undefined;

/**
 * Tells this module that the result of a registration whose completion is
 * sent is owed (its result line, its receipt: commands/register.ts); call the
 * function it returns once that is out. A signal's wait covers these too.
 */
export function owingResult(owing?: Owing): () => void {
  const entry = {};
  owed.set(entry, owing);
  return letGo(() => owed.delete(entry));
}

/** The function that lets go of what `remove` takes away, and ends a signal's wait when nothing is left. */
function letGo(remove: () => void): () => void {
  return () => {
    remove();
    // After this turn: the flow lets go of the hash (its lock), and the result is printed, before the exit.
    if (completing.size === 0 && owed.size === 0 && onCompletionsRecorded) setImmediate(onCompletionsRecorded);
  };
}

/**
 * Resolves at once, unless a signal is being handled: then never, since the
 * process is about to exit and nothing more may be sent (a request step
 * would open a session, a completion would be paid, with no time left).
 */
export function beforeSending(): Promise<void> {
  return stopping ? new Promise<void>(() => {}) : Promise.resolve();
}
/**
 * What this process holds outside a registration's flow, to let go of at an
 * interruption's exit: the lock of a store file being changed (a login on
 * the fly writing the token), the empty file that checks --receipt-dir
 * takes files. Left behind, a lock makes every process of another PID
 * namespace that shares the store wait out its lease, and the file is met
 * by every later `verify` of the folder.
 */
const cleanUps = new Set<() => void>();

/** Registers `cleanUp` to run at an interruption's exit; returns the function that unregisters it. */
export function cleanUpOnInterrupt(cleanUp: () => void): () => void {
  cleanUps.add(cleanUp);
  return () => cleanUps.delete(cleanUp);
}

/** Output held back to be written in one go (IO.dataSoon): written before the interruption's line. */
const pendingOutput = new Set<() => void>();
/** A command that stops on signals itself (the sandbox) takes them over. */
let takenOver = false;

/** What the flow holds while it works on a hash; call `done()` when it lets go. */
export interface Tracked {
  /** The session of this hash is saved in the store (an interruption keeps it). */
  sessionSaved(): void;
  /** Its record is saved (the session gone), and whether custody metadata is still to be sent. */
  recordSaved(metadataOwed: boolean): void;
  done(): void;
}

/** Tells this module that a registration of `hash` is under way, its lock released by `release`. */
export function track(hash: string, release: () => void): Tracked {
  const entry: Underway = { hash, sessionSaved: false, recordSaved: false, metadataOwed: false, release };
  underway.add(entry);
  return {
    sessionSaved: () => {
      entry.sessionSaved = true;
    },
    recordSaved: (metadataOwed) => {
      entry.recordSaved = true;
      entry.metadataOwed = metadataOwed;
    },
    done: () => {
      underway.delete(entry);
      if (entry.metadataOwed) metadataUnsent.add(hash);
    },
  };
}

/**
 * Registers `flush`, which writes output held back for a moment (a `hash`
 * line queued until the end of this event-loop turn), to run before an
 * interruption exits: what was computed is printed, not lost. Returns the
 * function that unregisters it.
 */
export function flushOnInterrupt(flush: () => void): () => void {
  pendingOutput.add(flush);
  return () => pendingOutput.delete(flush);
}

/** What is drawn on the terminal for the while (a spinner): cleared before an interruption's line. */
const transient = new Set<() => void>();

/**
 * Registers `clear`, which takes away what is drawn on the terminal for the
 * while (a spinner: its frames would go on over the line an interruption
 * says, and its last one stayed above it); returns the function that
 * unregisters it.
 */
export function clearOnInterrupt(clear: () => void): () => void {
  transient.add(clear);
  return () => transient.delete(clear);
}

/**
 * Registers `unblock`, which frees a thread of libuv's pool blocked in a
 * system call only another process can end (the open of a FIFO that no
 * writer has opened yet): process.exit() waits for the pool's threads, so
 * without it a signal would print its line and never exit. Run before an
 * interruption exits; returns the function that unregisters it.
 */
export function unblockOnInterrupt(unblock: () => void): () => void {
  return flushOnInterrupt(unblock);
}

/** For a command that handles SIGINT and SIGTERM itself, to stop cleanly (the sandbox). */
export function handleSignalsInCommand(): void {
  takenOver = true;
}

/**
 * What the line of an interruption says of the kept session of `hash`, if it
 * is kept: how to finish it, and what must be kept for that (a Merkle root's
 * tree). Set before its completion is sent; a later note replaces it.
 */
export function sessionNote(hash: string, note: string): void {
  sessionNotes.set(hash, note);
}

/** The line printed on an interruption, by what is under way. */
export function interruptionMessage(signal: string): string {
  const kept = [...underway].filter((u) => u.sessionSaved && !u.recordSaved).map((u) => u.hash);
  const recorded = [...new Set([...metadataUnsent, ...[...underway].filter((u) => u.metadataOwed).map((u) => u.hash)])];
  const head = `interrupted (${signal})`;
  // Completed, only the custody metadata left: the record is saved, and the same command sends the metadata.
  const metadata =
    recorded.length === 0
      ? ''
      : recorded.length === 1
        ? `; the record of ${recorded[0]} is saved, its custody metadata not confirmed as taken: run the same command again to send it`
        : `; ${recorded.length} records are saved, their custody metadata not confirmed as taken: run the same command again to send it`;
  // Results a signal's grace did not cover (thousands of receipts under one root): a re-run writes them.
  const unwritten = [...owed.values()].flatMap((owing) => owing?.() ?? []).map((clause) => `; ${clause}`);
  const tail = `${metadata}${unwritten.join('')}`;
  // Sent, and still unanswered when the grace ran out: the service may have completed them (r114: the line
  // read as if nothing had gone out, and the same command then met "already registered" with no record).
  const sent = new Set([...completing].map((entry) => entry.hash));
  const unanswered = kept.filter((hash) => sent.has(hash));
  if (kept.length === 1) {
    const finish = sessionNotes.get(kept[0]!) ?? `finish it with \`notarize complete ${kept[0]}\``;
    if (unanswered.length === 1) {
      return (
        `${head}; the completion of ${kept[0]} was sent and not answered: the service may have completed it; ` +
        `its session is kept: ${finish} (an "already registered" then means it had, and its record is lost)${tail}`
      );
    }
    return `${head}; the session of ${kept[0]} is kept: ${finish}${tail}`;
  }
  if (kept.length > 1) {
    // Named, when few enough for a line: `pending` shows them all alike (r119).
    const which = unanswered.length <= 3 ? `: ${unanswered.join(', ')}` : '';
    const some =
      unanswered.length === 0
        ? ''
        : ` (the completion${unanswered.length === 1 ? ' of one was' : `s of ${unanswered.length} were`} sent and not ` +
          `answered${which}; the service may have completed them; an "already registered" then means it had)`;
    return `${head}; ${kept.length} sessions are kept${some}: \`notarize pending\` lists them, \`notarize complete <hash>\` finishes one${tail}`;
  }
  if (tail !== '') return `${head}${tail}`;
  if (underway.size > 0) return `${head}; any saved session is kept: see \`notarize pending\``;
  return head;
}

/**
 * Keeps SIGXFSZ harmless, as Node makes it, so that a write beyond a file
 * size limit (`ulimit -f`) fails with EFBIG and the answer being saved is
 * quoted in the error. signal-exit, which ora loads (through restore-cursor)
 * once a spinner is shown on a terminal, listens for SIGXFSZ and raises it
 * again when it is the only listener, which would kill the process without a
 * word as soon as the event loop turns after such a write. While a listener
 * of ours remains, Node keeps catching the signal (its handle is unref'd: it
 * keeps nothing alive). Installed once by the entry point, like exitOnSignals:
 * a process-wide listener is the process's business, not the store's.
 */
export function keepFileSizeSignalHarmless(): void {
  if (process.platform === 'win32') return;
  process.on('SIGXFSZ', () => {});
}

export interface SignalOptions {
  /** Print the line as the JSON error object, as --json does for every error. */
  json?: boolean;
}

/**
 * Makes SIGINT and SIGTERM end the process (see the module comment). A
 * second signal while the first is being handled exits at once.
 */
export function exitOnSignals(options: SignalOptions = {}): void {
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (takenOver) return;
      const code = EXIT_ON[signal];
      // A second signal ends the wait, not the care: the line, the output held back, the locks.
      if (interrupted) exitNow(signal, code, options);
      interrupted = true;
      stopping = true;
      nowStopping?.();
      if (completing.size === 0 && owed.size === 0) return exitNow(signal, code, options);
      if (!options.json)
        say(`notarize: ${signal}: ${waitingFor()}; nothing more is sent (${signal} again to stop now)`);
      const timer = setTimeout(() => exitNow(signal, code, options), COMPLETION_GRACE_MS);
      onCompletionsRecorded = () => {
        clearTimeout(timer);
        exitNow(signal, code, options);
      };
    });
  }
}

/** What a signal waits for: answers to completions under way, or the results of registrations completed. */
function waitingFor(): string {
  const wait = `waiting up to ${COMPLETION_GRACE_MS / 1000} s`;
  if (completing.size === 0) {
    return `${wait} to write the result${owed.size === 1 ? '' : 's'} of ${owed.size === 1 ? 'a registration' : `${owed.size} registrations`} completed`;
  }
  const what = completing.size === 1 ? 'the completion' : `${completing.size} completions`;
  return `${wait} for the answer to ${what} under way, to keep ${completing.size === 1 ? 'its record' : 'their records'}`;
}

/**
 * Writes a line to stderr at once (the process may exit right after). On a
 * terminal, what is drawn there for the while (a spinner, which would go on
 * turning over the line, or a progress line) is taken away first, and the
 * line starts over the one the cursor is on: only such a line, or the ^C the
 * terminal echoed, is ever left without its end there.
 */
function say(line: string): void {
  for (const clear of transient) {
    try {
      clear();
    } catch {
      // stderr closed: nothing to clear, nor to tell.
    }
  }
  try {
    // A dumb terminal erases nothing (no ESC [K there, as it gets no spinner): the line goes over the ^C.
    const start = process.stderr.isTTY ? (process.env.TERM === 'dumb' ? '\r' : '\r\u001b[K') : '';
    writeSync(2, `${start}${line}\n`);
  } catch {
    // stderr closed: nothing to tell.
  }
}

/** The end of an interruption: output held back, one line, locks released (and cleanUps run), exit. */
function exitNow(signal: 'SIGINT' | 'SIGTERM', code: number, options: SignalOptions): never {
  for (const flush of pendingOutput) {
    try {
      flush();
    } catch {
      // stdout closed: the line below and the exit are all that is left.
    }
  }
  const message = interruptionMessage(signal);
  say(
    options.json ? JSON.stringify({ error: { code: 'interrupted', exitCode: code, message } }) : `notarize: ${message}`,
  );
  for (const release of [...[...underway].map((u) => u.release), ...cleanUps]) {
    try {
      release();
    } catch {
      // A lock left behind is found stale by the next run (its pid is gone).
    }
  }
  process.exit(code);
}
