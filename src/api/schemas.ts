/**
 * The wire shapes of the notarization service, as documented in
 * shared/service-api.md. These schemas are the single source of the wire
 * types: the client validates answers with them and the sandbox builds and
 * checks its bodies with them, so the two cannot drift apart silently.
 *
 * Answers are validated but never re-serialised from the parsed copy: the
 * client forwards the raw text it received (see api/client.ts), so `looseObject`
 * here only decides what is *checked*, not what is kept.
 */
import { z } from 'zod';
import { isSendableToken } from '../secrets.js';
import { hashSchema } from '../validation.js';

/** The only blockchain the documentation lists. */
export const BLOCKCHAIN_TYPES = ['ALGORAND'] as const;

/** The docs' sample sends booleans as strings ("false"); the field is typed boolean. */
const wireBoolean = z.union([z.boolean(), z.enum(['true', 'false']).transform((s) => s === 'true')]);

/** Body of `POST /api/v2/registration/?subscription=true`. */
export const registrationRequestSchema = z.looseObject({
  blockchainType: z.enum(BLOCKCHAIN_TYPES),
  custody: wireBoolean,
  description: z.string(),
  hash: hashSchema,
  signed: wireBoolean,
  status: z.enum(['registered', 'not_registered']),
});
export type RegistrationRequest = z.input<typeof registrationRequestSchema>;

const nullableString = z.string().nullable();
const unixSeconds = z.int().nonnegative();

/**
 * The subscription session: answer of the request step, body of forfait.
 * `canceledAt` is documented boolean but sent as integer 0; `customer` is
 * misspelt `custumer` in the field table. Both spellings and all three types
 * are accepted.
 */
export const subscriptionSessionSchema = z.looseObject({
  sessionId: z.string().min(1),
  id: nullableString,
  userId: z.int(),
  planId: z.string(),
  planNickname: z.string(),
  status: z.string(),
  created: unixSeconds,
  currentPeriodStart: unixSeconds,
  currentPeriodEnd: unixSeconds,
  canceledAt: z.union([z.boolean(), z.int(), z.null()]).optional(),
  customer: nullableString.optional(),
  custumer: nullableString.optional(),
  defaultPaymentMethod: nullableString.optional(),
  latestInvoice: nullableString.optional(),
});
export type SubscriptionSession = z.infer<typeof subscriptionSessionSchema>;

/**
 * Whether `json` is a session of the documented shape. A session kept
 * although it is not (a request step's answer of another shape) is sent only
 * when named (`notarize complete <hash>`); told from its text, so that one
 * kept by any build of notarize is known.
 */
export function isSubscriptionSession(json: string): boolean {
  try {
    return subscriptionSessionSchema.safeParse(JSON.parse(json)).success;
  } catch {
    return false;
  }
}

/** The status of the service's record of a completed registration (shared/service-api.md): a record must have it. */
export const COMPLETED_STATUS = 'registered';

/**
 * The notarization record: answer of forfait. The chain fields are null right
 * after completion (the chain write happens later) and their types once
 * filled are unknown, so they accept any JSON value.
 */
export const notarizationRecordSchema = z.looseObject({
  hash: z.string().regex(/^[0-9a-fA-F]{64}$/, 'expected 64 hex characters'),
  description: z.string(),
  custody: z.boolean(),
  signed: z.boolean(),
  status: z.string(),
  blockchainType: z.string(),
  creationDate: z.int().nonnegative(),
  userId: z.int(),
  paymentId: nullableString.optional(),
  tags: z.array(z.unknown()).optional(),
  signer: z.unknown().optional(),
  signature: z.unknown().optional(),
  txHash: z.unknown().optional(),
  holder: z.unknown().optional(),
  txId: z.unknown().optional(),
  assetId: z.unknown().optional(),
  payload: z.unknown().optional(),
});
export type NotarizationRecord = z.infer<typeof notarizationRecordSchema>;

/** Body of `POST /api/v2/auth/login`. */
export const loginRequestSchema = z.looseObject({ apiKey: z.string().min(1) });

/** Answer of `PUT /api/v2/file/{hash}`: `{}` in the documentation; any JSON object is taken. */
export const fileMetadataAnswerSchema = z.looseObject({});

/** Answer of `POST /api/v2/auth/login`. */
export const loginResponseSchema = z.looseObject({
  // A token we could not send back (control or non-ASCII characters) is not one.
  token: z.string().min(1).refine(isSendableToken, 'the token holds characters an HTTP header cannot carry'),
});

/** Body of `PUT /api/v2/file/{hash}` (custody only). */
export const fileMetadataSchema = z.looseObject({
  hash: hashSchema,
  name: z.string(),
  type: z.string(),
  size: z.int().nonnegative(),
  // Unix milliseconds (service-api.md), negative before 1970.
  lastModified: z.int(),
  userId: z.int(),
  walletName: z.string().nullable().optional(),
});
export type FileMetadata = z.infer<typeof fileMetadataSchema>;

/**
 * The claims notarize reads from the (HS256) JWT; the rest are kept but
 * unused. Each is read on its own, one of another type as absent: the
 * service documents none of their types, and a `userId` sent as a string
 * made the whole payload unreadable, `exp` with it, so a token long expired
 * was sent as one that never expires.
 */
export const tokenClaimsSchema = z.looseObject({
  userId: z.int().optional().catch(undefined),
  email: z.string().optional().catch(undefined),
  iat: z.number().optional().catch(undefined),
  nbf: z.number().optional().catch(undefined),
  exp: z.number().optional().catch(undefined),
  iss: z.string().optional().catch(undefined),
});
export type TokenClaims = z.infer<typeof tokenClaimsSchema>;
