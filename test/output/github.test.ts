/**
 * GitHub Actions workflow commands (output/github.ts): on only in a step, and
 * outside text in them escaped so that it cannot forge another command.
 * (What results become there: github-results.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { errorCommand, inGitHubActions, warningCommand } from '../../src/output/github.js';

/** No secret to remove. */
const asIs = (text: string) => text;

describe('GitHub Actions workflow commands', () => {
  it('is on only when GITHUB_ACTIONS is exactly "true"', () => {
    expect(inGitHubActions({ GITHUB_ACTIONS: 'true' })).toBe(true);
    expect(inGitHubActions({ GITHUB_ACTIONS: '1' })).toBe(false);
    expect(inGitHubActions({})).toBe(false);
  });

  it('a message cannot end its command or start another: %, line breaks and controls are escaped', () => {
    const text = '50%\r\n::warning::forged\u001b[31m';
    expect(errorCommand(text, asIs)).toBe('::error::50%25\\r\\n::warning::forged\\u001b[31m');
    expect(warningCommand(text, asIs)).toBe('::warning title=notarize::50%25\\r\\n::warning::forged\\u001b[31m');
  });

  it('removes secrets before escaping', () => {
    const redact = (text: string) => text.replaceAll('k%y_1', '[redacted]');
    expect(errorCommand('key k%y_1', redact)).toBe('::error::key [redacted]');
  });
});
