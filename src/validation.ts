/**
 * What the wire (api/) and the disk (store/) both validate with: the shape of
 * a SHA-256 digest, and the one-line description of a zod failure that names
 * the field. A neutral leaf: it imports zod and nothing of notarize, so the
 * store and the client both use it without either depending on the other
 * (the store checks its own files, not the service's answers) or on core/.
 * eslint.config.js keeps it a leaf.
 */
import { z } from 'zod';

/** A SHA-256 digest as the service wants it and the store names its files: 64 lowercase hex characters. */
export const hashSchema = z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex characters');

/**
 * Describes the first problem zod found as `field: message`, the form used in
 * exit-5 errors (an answer) and store errors (a file), so a user can see
 * which field was wrong.
 */
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid value';
  const path = issue.path.length > 0 ? issue.path.join('.') : '(body)';
  return `${path}: ${issue.message}`;
}
