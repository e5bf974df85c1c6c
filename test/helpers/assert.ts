/**
 * Assertions on how a run of notarize failed.
 */
import { expect } from 'vitest';
import { STACK_LINE, type Run } from './cli.js';

/** The `{"error": ...}` line notarize prints on stderr with --json. */
export interface JsonError {
  error: { code: string; exitCode: number; message: string; hint?: string };
}

/**
 * Asserts a failed --json run: nothing on stdout, and stderr is exactly one
 * line of JSON `{"error":{"code","exitCode","message",...}}` whose exitCode is
 * the process's. Returns the parsed error.
 */
export function expectJsonError(output: Run, exitCode: number): JsonError['error'] {
  expect(output.code, output.stderr).toBe(exitCode);
  expect(output.stdout).toBe('');
  expect(output.stderr.endsWith('\n')).toBe(true);
  const lines = output.stderr.trimEnd().split('\n');
  expect(lines, output.stderr).toHaveLength(1);
  const parsed = JSON.parse(lines[0]!) as JsonError;
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(parsed.error).toMatchObject({ code: expect.any(String), exitCode, message: expect.any(String) });
  expect(parsed.error.code).not.toBe('');
  expect(parsed.error.message).not.toBe('');
  return parsed.error;
}

/**
 * Asserts a failed plain run: the exit code, nothing on stdout, one
 * `notarize: ...` message matching `message` on stderr, and no stack trace.
 */
export function expectFailure(output: Run, exitCode: number, message: RegExp): void {
  expect(output.code, `stdout: ${output.stdout}\nstderr: ${output.stderr}`).toBe(exitCode);
  expect(output.stdout).toBe('');
  expect(output.stderr).toMatch(/^notarize: /m);
  expect(output.stderr).toMatch(message);
  expect(output.stderr).not.toMatch(STACK_LINE);
}
