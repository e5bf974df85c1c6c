/**
 * How the result of register/complete is shown: the record (or, for a
 * registration left pending, the session) on stdout, exactly as the service
 * sent it with --json, as a table otherwise; what happened on stderr.
 */
import type { Outcome } from '../core/notarize.js';
import type { IO } from './io.js';
import { verificationUrl } from '../api/pages.js';
import { renderRecord } from './render.js';

export interface ShowOptions {
  json: boolean;
  baseUrl: string;
}

function parsedObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Stored text that is not an object is shown raw below.
  }
  return { answer: text };
}

/** Prints a completed record; with --json, the service's exact text. */
export function showRecord(io: IO, recordJson: string, hash: string, options: ShowOptions): void {
  if (options.json) {
    io.data(recordJson);
    return;
  }
  io.data(renderRecord(parsedObject(recordJson), { verification: verificationUrl(options.baseUrl, hash) }, io.colour));
}

/**
 * A hash the ledger or the service (a 409) says is registered: the ledger's
 * record when this store has one; otherwise the service's words, no record,
 * and the public verification page.
 */
function showAlreadyRegistered(
  io: IO,
  outcome: Extract<Outcome, { kind: 'already-registered' }>,
  options: ShowOptions,
): void {
  const { hash, entry, service } = outcome;
  const said = service ? `the service says so (409${service.message ? `: ${service.message}` : ''})` : undefined;
  if (service?.retiredSession) io.info(`its pending session was moved aside to ${service.retiredSession}`);
  if (entry) {
    io.info(
      `${hash} is already registered (completed ${entry.completedAt}${said ? `; ${said}` : ''}); use --force to register it again`,
    );
    showRecord(io, entry.recordJson, hash, options);
    return;
  }
  const verification = verificationUrl(options.baseUrl, hash);
  io.info(
    `${hash} is already registered: ${said ?? 'the service says so'}; this store has no record of it, see ${verification}`,
  );
  const summary = {
    hash,
    status: 'already-registered',
    record: null,
    verificationUrl: verification,
    message: service?.message ?? null,
  };
  if (options.json) io.data(JSON.stringify(summary, null, 2));
  else
    io.data(
      renderRecord(
        {
          hash,
          status: 'already registered (the service says so; no local record)',
          message: service?.message ?? null,
        },
        { verification },
        io.colour,
      ),
    );
}

/** Prints the outcome of register or complete; see the module comment. */
export function showOutcome(io: IO, outcome: Outcome, options: ShowOptions): void {
  switch (outcome.kind) {
    case 'already-registered':
      showAlreadyRegistered(io, outcome, options);
      return;
    case 'pending': {
      const { entry } = outcome;
      io.info(
        `${outcome.reused ? 'a session was already pending' : 'session saved'} for ${entry.hash}; ` +
          `complete it with: notarize complete ${entry.hash}`,
      );
      if (options.json) io.data(entry.sessionJson);
      else {
        const session = parsedObject(entry.sessionJson);
        io.data(
          renderRecord(
            { hash: entry.hash, description: entry.description, savedAt: entry.savedAt, ...session },
            {},
            io.colour,
          ),
        );
      }
      return;
    }
    case 'completed':
      io.info(`registered ${outcome.entry.hash}${outcome.reusedSession ? ' (with the pending session)' : ''}`);
      showRecord(io, outcome.entry.recordJson, outcome.entry.hash, options);
      if (outcome.custody) {
        io.info(
          outcome.custody.metadataSent
            ? 'custody: the file metadata was sent. The file itself was NOT uploaded: the service does not document how to upload file bytes.'
            : 'custody: the file metadata could not be sent, and the file itself was NOT uploaded.',
        );
      }
      return;
  }
}
