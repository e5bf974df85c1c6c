/**
 * Running a child process and measuring it: wall time (spawn to exit) and,
 * when asked, peak resident memory. Peak memory comes from GNU time
 * (`/usr/bin/time -f %M`, exact: the kernel's maxrss of the child and the
 * children it waited for) when it is installed, else from polling
 * /proc/<pid>/status VmHWM over the child's process tree every few
 * milliseconds (a high-water mark, so only growth in the last interval
 * before exit can be missed). Every child is tracked so that the runner can
 * kill it (by pid, never by name) if the bench fails or is interrupted.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const GNU_TIME = '/usr/bin/time';
const POLL_MS = 5;

/** Children started and not yet exited, by pid. */
const live = new Map();
/** GNU time output files not yet read. */
const timeFiles = new Set();

function gnuTimeUsable() {
  if (process.env.BENCH_MEMORY === 'proc') return false;
  try {
    accessSync(GNU_TIME, constants.X_OK);
  } catch {
    return false;
  }
  return true;
}

/** How peak memory is measured on this machine (for the report). */
export const MEMORY_METHOD = gnuTimeUsable() ? 'GNU time %M (maxrss)' : '/proc VmHWM polling (5 ms)';
const useGnuTime = gnuTimeUsable();

/** Kills every child still running (SIGKILL, by pid) and removes their files. Safe in an 'exit' handler. */
export function killAll() {
  for (const [pid, child] of live) {
    try {
      // A negative pid kills the child's process group (the shell loop's curls too).
      process.kill(child.detached ? -pid : pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
  for (const file of timeFiles) rmSync(file, { force: true });
  timeFiles.clear();
}

/** Registers a long-running child (e.g. a sandbox) so killAll() stops it. */
export function track(child, detached = false) {
  child.detached = detached;
  live.set(child.pid, child);
  child.once('exit', () => live.delete(child.pid));
}

function vmHwmKB(pid) {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The largest VmHWM in the tree under `pid` (bounded depth). */
function treePeakKB(pid, depth = 0) {
  let peak = vmHwmKB(pid);
  if (depth < 4) for (const child of childrenOf(pid)) peak = Math.max(peak, treePeakKB(child, depth + 1));
  return peak;
}

/**
 * Runs `command args` and resolves with { wallMs, peakKB, cpuMs, code }
 * (cpuMs: user + system time, 10 ms resolution, only with GNU time). Options:
 * env, cwd, memory (measure peak RSS; default true), stdout (a file path to
 * write stdout to; default discarded), timeoutMs (kill and reject after it).
 * Rejects when the command exits non-zero unless allowFailure.
 */
export function measure(command, args, options = {}) {
  const memory = options.memory ?? true;
  const timeoutMs = options.timeoutMs ?? 300_000;
  let file = command;
  let argv = args;
  let timeFile;
  if (memory && useGnuTime) {
    timeFile = join(tmpdir(), `notarize-bench-time-${process.pid}-${Math.random().toString(16).slice(2)}`);
    timeFiles.add(timeFile);
    file = GNU_TIME;
    argv = ['-f', '%M %U %S', '-o', timeFile, command, ...args];
  }
  const out = options.stdout ? openSync(options.stdout, 'w') : 'ignore';
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(file, argv, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['ignore', out, 'pipe'],
      detached: true,
    });
    track(child, true);
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      if (stderr.length < 8192) stderr += chunk;
    });
    let polled = 0;
    const poller =
      memory && !useGnuTime
        ? setInterval(() => {
            polled = Math.max(polled, treePeakKB(child.pid));
          }, POLL_MS)
        : undefined;
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      if (poller) clearInterval(poller);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
      clearTimeout(timer);
      if (poller) clearInterval(poller);
      if (typeof out === 'number') closeSync(out);
      let peakKB = memory ? polled : undefined;
      let cpuMs;
      if (timeFile) {
        try {
          // GNU time writes "Command exited with non-zero status N" first on failure.
          const lines = readFileSync(timeFile, 'utf8').trim().split('\n');
          const [maxrss, user, system] = lines[lines.length - 1].split(' ').map(Number);
          peakKB = maxrss;
          cpuMs = (user + system) * 1000;
        } catch {
          peakKB = undefined;
        }
        rmSync(timeFile, { force: true });
        timeFiles.delete(timeFile);
      }
      const failed = code !== 0 || signal !== null;
      if (failed && !options.allowFailure) {
        reject(
          new Error(
            `${command} ${args.slice(0, 3).join(' ')}${args.length > 3 ? ' ...' : ''} exited with ${signal ?? code}: ${stderr.trim().slice(0, 2000)}`,
          ),
        );
        return;
      }
      // Let the stderr pipe drain before resolving.
      child.stderr.once('close', () => resolve({ wallMs, peakKB, cpuMs, code, stderr }));
      if (child.stderr.closed) resolve({ wallMs, peakKB, cpuMs, code, stderr });
    });
  });
}

/** Runs a command to completion and returns its stdout (for versions and the like); '' on failure. */
export function capture(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    track(child);
    let text = '';
    child.stdout.on('data', (chunk) => (text += chunk));
    child.once('error', () => resolve(''));
    child.once('close', (code) => resolve(code === 0 ? text.trim() : ''));
  });
}
