/**
 * The sandbox's in-memory world: one user, the subscription sessions it
 * issued, the registrations in progress or completed, and file metadata.
 * Every body it builds is checked against the shared wire schemas, so the
 * emulator cannot drift from what the client expects.
 */
import { randomBytes } from 'node:crypto';
import {
  notarizationRecordSchema,
  subscriptionSessionSchema,
  type FileMetadata,
  type NotarizationRecord,
  type SubscriptionSession,
} from '../api/schemas.js';

/** The one user every sandbox token belongs to. */
export const SANDBOX_USER = { userId: 1390, email: 'sandbox@example.invalid' } as const;

/** The free plan's price id, in the `price_…` form of the real service. */
export const SANDBOX_PLAN_ID = 'price_1SandboxFreePlan0000000';

// The free-plan sample's period is exactly ten days (1684418257 - 1683554257).
const PERIOD_SECONDS = 10 * 24 * 3600;

/** A hash that went through the request step, and its record once forfait completed it. */
export interface Registration {
  hash: string;
  description: string;
  custody: boolean;
  signed: boolean;
  session: SubscriptionSession;
  record?: NotarizationRecord;
}

/** All the sandbox remembers; lives as long as the sandbox instance. */
export class SandboxState {
  /** Every session issued, by sessionId. */
  readonly sessions = new Map<string, SubscriptionSession>();
  /** Registrations by hash (lowercase). */
  readonly registrations = new Map<string, Registration>();
  /** Completed notarization records by hash. */
  readonly records = new Map<string, NotarizationRecord>();
  /** File metadata sent by `PUT /api/v2/file/{hash}`, by hash. */
  readonly files = new Map<string, FileMetadata>();
  private activeSessionId: string | undefined;
  private lastSessionMs = 0;

  /** Issues a new free-plan session in the sample's key order and remembers it. */
  issueSession(): SubscriptionSession {
    // On the free plan the real sessionId is a millisecond timestamp; bump it
    // when two sessions are issued within the same millisecond so it stays unique.
    this.lastSessionMs = Math.max(Date.now(), this.lastSessionMs + 1);
    const created = Math.floor(this.lastSessionMs / 1000);
    const session = {
      sessionId: String(this.lastSessionMs),
      id: null,
      userId: SANDBOX_USER.userId,
      planId: SANDBOX_PLAN_ID,
      planNickname: 'FREE',
      status: 'active',
      created,
      currentPeriodStart: created,
      currentPeriodEnd: created + PERIOD_SECONDS,
      canceledAt: 0,
      customer: null,
      defaultPaymentMethod: null,
      latestInvoice: null,
    };
    subscriptionSessionSchema.parse(session);
    this.sessions.set(session.sessionId, session);
    return session;
  }

  /** The user's active subscription: issued on first use, the same one afterwards. */
  activeSession(): SubscriptionSession {
    const known = this.activeSessionId === undefined ? undefined : this.sessions.get(this.activeSessionId);
    if (known) return known;
    const session = this.issueSession();
    this.activeSessionId = session.sessionId;
    return session;
  }

  /** Builds the record completing `registration`, in the sample's key order, and stores it. */
  complete(registration: Registration): NotarizationRecord {
    const record = {
      hash: registration.hash,
      description: registration.description,
      custody: registration.custody,
      signed: registration.signed,
      signer: null,
      signature: null,
      txHash: null,
      status: 'registered',
      blockchainType: 'ALGORAND',
      holder: null,
      txId: null,
      assetId: null,
      tags: [],
      paymentId: registration.session.id ?? `sub_sandbox_${randomBytes(8).toString('hex')}`,
      creationDate: Date.now(),
      payload: null,
      userId: SANDBOX_USER.userId,
    };
    notarizationRecordSchema.parse(record);
    registration.record = record;
    this.records.set(record.hash, record);
    return record;
  }
}
