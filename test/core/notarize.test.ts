/**
 * The register/complete flow (src/core/notarize.ts) branch by branch, its
 * dependencies injected: a real ServiceStore in the bed's temporary
 * directory, and the real ApiClient against the bed's sandbox (127.0.0.1,
 * port 0), whose fault book spoils the answers. A fake api stands in only
 * where the sandbox never answers so; each use says why. These tests alone
 * take every branch of the flow (see vitest.config.ts):
 *   npx vitest run --coverage --coverage.include=src/core/notarize.ts test/core/notarize
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ApiClient, logIn, parseAnswer } from '../../src/api/client.js';
import { notarizationRecordSchema, subscriptionSessionSchema } from '../../src/api/schemas.js';
import {
  complete,
  custodyFailure,
  holdAcross,
  register,
  type FlowDeps,
  type RegisterInput,
  type SessionSource,
} from '../../src/core/notarize.js';
import {
  HeldBackError,
  InvalidAnswerError,
  NotarizeError,
  ProtocolError,
  ServiceRefusedError,
  StoreError,
  TransientError,
  UnreadableAnswerError,
  UsageError,
} from '../../src/errors.js';
import { parseFaults } from '../../src/sandbox/server.js';
import { TokenCredentials } from '../../src/core/credentials.js';
import { Store } from '../../src/store/store.js';
import { ServiceStore, type CustodyOwed, type LedgerEntry, type PendingEntry } from '../../src/store/service-store.js';
import { MAX_RECORD_DEPTH } from '../../src/core/receipt-format.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { sandboxApi as sandboxApiOf, sandboxTransport } from '../helpers/sandbox-api.js';
import { sha256 } from '../helpers/documents.js';
import { rejection, rejectionOf } from '../helpers/catch.js';
import { readFixture } from '../helpers/fixtures.js';

let bed: Bed;
useBed((created) => (bed = created));

/** The flow's clock in these tests, so that saved times can be asserted exactly. */
const NOW = new Date('2030-01-02T03:04:05.678Z');
const FILE = { name: 'contract.pdf', size: 1234, lastModified: 1_700_000_000_000 };

const transport = (userAgent?: string) => sandboxTransport(bed, userAgent);
const sandboxApi = (options: Parameters<typeof sandboxApiOf>[1] = {}) => sandboxApiOf(bed, options);

type Planned = Partial<
  Pick<ApiClient, 'requestRegistration' | 'completeRegistration' | 'putFileMetadata' | 'activeSubscription'>
>;

/**
 * An api giving answers the sandbox never gives (each caller says which),
 * with the real transport for the URLs of hints. A call not planned fails.
 */
function fakeApi(planned: Planned): ApiClient {
  const unplanned = (name: string) => () => Promise.reject(new Error(`unplanned call to ${name}`));
  return {
    transport: transport(),
    requestRegistration: planned.requestRegistration ?? unplanned('requestRegistration'),
    completeRegistration: planned.completeRegistration ?? unplanned('completeRegistration'),
    putFileMetadata: planned.putFileMetadata ?? unplanned('putFileMetadata'),
    activeSubscription: planned.activeSubscription ?? unplanned('activeSubscription'),
  } as unknown as ApiClient;
}

let stores = 0;
/** A fresh store of the bed's sandbox, in its own directory. */
function newStore(): ServiceStore {
  stores += 1;
  return new ServiceStore(join(bed.root, `service-${stores}`), bed.url);
}

/** A second handle on the same directory, which checks its directories afresh. */
function reopen(store: ServiceStore): ServiceStore {
  return new ServiceStore(store.dir, store.baseUrl);
}

interface World {
  store: ServiceStore;
  deps: FlowDeps;
  steps: string[];
}

function world(options: { api?: ApiClient; store?: ServiceStore } = {}): World {
  const steps: string[] = [];
  const store = options.store ?? newStore();
  const deps: FlowDeps = {
    api: options.api ?? sandboxApi(),
    store,
    onStep: (step) => steps.push(step),
    lockWaitMs: 5000,
    now: () => NOW,
  };
  return { store, deps, steps };
}

function input(hash: string, overrides: Partial<RegisterInput> = {}): RegisterInput {
  return {
    hash,
    description: `document ${hash.slice(0, 8)}`,
    custody: false,
    signed: false,
    blockchain: 'ALGORAND',
    complete: true,
    force: false,
    ...overrides,
  };
}

const fault = (spec: string) => bed.sandbox.addFaults(parseFaults(spec));
/** A fake call that went out (`onSent` told, as the real client tells it) and failed with `error`. */
const sentThen = (onSent: (() => void) | undefined, error: Error): Promise<never> => {
  onSent?.();
  return Promise.reject(error);
};
/** The routes called since the sandbox started, logins left out. */
const called = () => bed.sandbox.calls.map((call) => call.route).filter((route) => route !== 'login');
const forfaitBodies = () => bed.sandbox.calls.filter((call) => call.route === 'forfait').map((call) => call.body);
const page = (hash: string) => `${bed.url}/verification/${hash}`;

/**
 * Puts a link to a directory elsewhere where `store` keeps `sub` (pending,
 * ledger...), moving what was there into it: reads through the link still
 * work, every write there is refused (the store never writes through a
 * link), as in a hostile workspace. Returns a store that has not yet
 * checked that directory.
 */
function plantLink(store: ServiceStore, sub: string): ServiceStore {
  const there = join(store.dir, sub);
  const elsewhere = join(bed.root, `elsewhere-${stores}-${sub}`);
  mkdirSync(store.dir, { recursive: true, mode: 0o700 });
  if (existsSync(there)) renameSync(there, elsewhere);
  else mkdirSync(elsewhere, { mode: 0o700 });
  symlinkSync(elsewhere, there);
  return reopen(store);
}

/** An errno error as node:fs throws it on a full disk. */
const diskFull = () => Object.assign(new Error('ENOSPC: no space left on device, open'), { code: 'ENOSPC' });

/**
 * A real store whose disk is full for one thing (making a lock, or saving a
 * session). Fake because a really full disk needs a mount;
 * test/wire/disk-full.test.ts fills one for node:fs and goes through main().
 */
/** An errno error as node:fs throws it where the user may not write. */
const noPermission = () => Object.assign(new Error('EACCES: permission denied, unlink'), { code: 'EACCES' });

class FullDiskStore extends ServiceStore {
  readonly #full: 'lock' | 'pending' | 'custody' | 'drop' | 'leftover';
  /** For 'drop' and 'leftover': what removing a session throws (no permission by default). */
  readonly #refusal: () => Error;
  constructor(
    dir: string,
    full: 'lock' | 'pending' | 'custody' | 'drop' | 'leftover',
    refusal: () => Error = noPermission,
  ) {
    super(dir, bed.url);
    this.#full = full;
    this.#refusal = refusal;
  }
  override removePending(hash: string): Promise<void> {
    return this.#full === 'drop' ? Promise.reject(this.#refusal()) : super.removePending(hash);
  }
  override removeLeftoverPending(record: LedgerEntry): void {
    if (this.#full === 'leftover') throw this.#refusal();
    super.removeLeftoverPending(record);
  }
  override lockFile(hash: string): string {
    if (this.#full === 'lock') throw diskFull();
    return super.lockFile(hash);
  }
  override savePending(entry: PendingEntry): Promise<void> {
    return this.#full === 'pending' ? Promise.reject(diskFull()) : super.savePending(entry);
  }
  override saveCustodyOwed(entry: CustodyOwed): Promise<void> {
    return this.#full === 'custody' ? Promise.reject(diskFull()) : super.saveCustodyOwed(entry);
  }
}

/** A record of `hash` as the service sends it (the documentation's sample, its hash replaced). */
function recordText(hash: string): string {
  return readFixture('record.json').replace(/[0-9a-f]{64}/, hash);
}

/** Registers `hash` up to its saved session, in a store of its own unless given one. */
async function requestOnly(hash: string, store = newStore(), overrides: Partial<RegisterInput> = {}) {
  const outcome = await register(world({ store }).deps, input(hash, { ...overrides, complete: false }));
  if (outcome.kind !== 'pending') throw new Error(`expected a pending session, got ${outcome.kind}`);
  return { store, entry: outcome.entry };
}

describe('register', () => {
  it('a new hash: session saved, forfait sent with it byte for byte, the record in the ledger, the session gone', async () => {
    const hash = sha256('new');
    const { store, deps, steps } = world();
    const outcome = await register(deps, input(hash, { file: FILE }));

    expect(steps).toEqual(['requesting', 'completing', 'saving']);
    expect(called()).toEqual(['request', 'forfait']);
    expect(outcome).toEqual({
      kind: 'completed',
      reusedSession: false,
      entry: { hash, completedAt: NOW.toISOString(), file: FILE, recordJson: expect.any(String) },
    });
    if (outcome.kind !== 'completed') return;
    expect(JSON.parse(outcome.entry.recordJson)).toEqual(bed.sandbox.records.get(hash));
    expect(store.readRecord(hash)).toEqual(outcome.entry);
    expect(store.readPending(hash)).toBeUndefined();
    // What forfait sent is the request step's answer, which the sandbox compares exactly.
    expect(JSON.parse(forfaitBodies()[0]!)).toMatchObject({ userId: 1390 });
  });

  it('with only the api and the store given: no steps told, the real clock, the default lock wait', async () => {
    const hash = sha256('defaults');
    const store = newStore();
    const before = Date.now();
    const outcome = await register({ api: sandboxApi(), store }, input(hash));
    expect(outcome.kind).toBe('completed');
    if (outcome.kind !== 'completed') return;
    const completedAt = Date.parse(outcome.entry.completedAt);
    expect(completedAt).toBeGreaterThanOrEqual(before);
    expect(completedAt).toBeLessThanOrEqual(Date.now());
    expect(outcome.entry).not.toHaveProperty('file');
  });

  it('a hash in the ledger: already registered from the ledger, nothing sent, a session left beside it removed', async () => {
    const hash = sha256('in the ledger');
    const { store, deps } = world();
    await register(deps, input(hash));
    const entry = store.readRecord(hash);
    // A process stopped between saving the record and removing its session.
    await store.savePending({
      hash,
      description: 'left',
      custody: false,
      savedAt: '2000-01-01T00:00:00.000Z',
      sessionJson: '{}',
    });
    const sent = bed.sandbox.calls.length;

    const outcome = await register(deps, input(hash));
    expect(outcome).toEqual({ kind: 'already-registered', hash, entry });
    expect(outcome).not.toHaveProperty('service');
    expect(store.readPending(hash)).toBeUndefined();
    expect(bed.sandbox.calls).toHaveLength(sent);
  });

  it("--force asks the service again; its 409 is already-registered with the ledger's entry", async () => {
    const hash = sha256('forced');
    const { store, deps } = world();
    await register(deps, input(hash));
    const entry = store.readRecord(hash);

    const outcome = await register(deps, input(hash, { force: true }));
    expect(outcome).toEqual({
      kind: 'already-registered',
      hash,
      entry,
      service: { message: `the hash ${hash} is already registered`, retiredSession: undefined },
    });
    expect(called()).toEqual(['request', 'forfait', 'request']);
    expect(store.readPending(hash)).toBeUndefined();
  });

  it('a 409 to the request step for a hash this store never completed: already registered, without an entry', async () => {
    const hash = sha256('registered elsewhere');
    await register(world().deps, input(hash));
    const { store, deps } = world();

    const outcome = await register(deps, input(hash));
    expect(outcome).toEqual({
      kind: 'already-registered',
      hash,
      entry: undefined,
      service: { message: `the hash ${hash} is already registered`, retiredSession: undefined },
    });
    expect(store.readPending(hash)).toBeUndefined();
    expect(store.readRecord(hash)).toBeUndefined();
  });

  it('a refusal of the request step other than 409 says what to do, and nothing is saved', async () => {
    const hash = sha256('refused');
    fault('request:status=400*1');
    const { store, deps } = world();
    const error = await rejectionOf(register(deps, input(hash)), ServiceRefusedError);
    // r115: the service's words alone, no hint.
    expect(error).toMatchObject({
      status: 400,
      serviceMessage: 'injected fault: HTTP 400',
      hint:
        `the service refused the registration request of ${hash}, as its message says: no session of it was ` +
        'kept and nothing paid for it; fix what it names and run the same command again',
    });
    expect(store.readPending(hash)).toBeUndefined();
    expect(store.readUnanswered(hash)).toBeUndefined();
  });

  it('--no-complete stops at the saved session; a re-run reuses it without asking, and completes with it', async () => {
    const hash = sha256('split');
    const { store, deps, steps } = world();
    const first = await register(deps, input(hash, { complete: false, file: FILE }));
    expect(first).toEqual({
      kind: 'pending',
      reused: false,
      entry: {
        hash,
        description: `document ${hash.slice(0, 8)}`,
        custody: false,
        signed: false,
        savedAt: NOW.toISOString(),
        file: FILE,
        sessionJson: expect.any(String),
      },
    });
    if (first.kind !== 'pending') return;
    expect(store.readPending(hash)).toEqual(first.entry);
    expect(steps).toEqual(['requesting']);

    expect(await register(deps, input(hash, { complete: false }))).toEqual({ ...first, reused: true });
    expect(called()).toEqual(['request']);

    const done = await register(deps, input(hash));
    expect(done).toMatchObject({ kind: 'completed', reusedSession: true, entry: { file: FILE } });
    expect(called()).toEqual(['request', 'forfait']);
    expect(forfaitBodies()).toEqual([first.entry.sessionJson]);
  });

  it('a pending session asked for another description or custody: refused, nothing sent, the session kept', async () => {
    const hash = sha256('asked otherwise');
    const { store, entry } = await requestOnly(hash, newStore(), { description: 'first', descriptionGiven: true });
    const { deps } = world({ store });
    for (const overrides of [
      { description: 'second', descriptionGiven: true },
      { description: 'first', descriptionGiven: true, custody: true },
      { description: 'second', descriptionGiven: true, complete: false },
      { description: 'second', descriptionGiven: true, force: true },
      { description: 'first', descriptionGiven: true, signed: true },
    ]) {
      const error = await rejectionOf(register(deps, input(hash, overrides)), UsageError);
      expect(error).toMatchObject({ code: 'pending_session_differs', exitCode: 2 });
      const expected =
        'custody' in overrides
          ? 'with no custody'
          : 'signed' in overrides
            ? 'with signed: false'
            : 'with the description "first"';
      expect(error.message).toBe(`a pending session for ${hash} was requested ${expected}; nothing was sent`);
      expect(error.hint).toContain(`notarize pending drop ${hash}`);
    }
    expect(called()).toEqual(['request']);
    expect(store.readPending(hash)).toEqual(entry);
    // The same description given, or none given (a renamed copy's name): completed with the session.
    expect(
      await register(deps, input(hash, { description: 'first', descriptionGiven: true, complete: false })),
    ).toMatchObject({
      kind: 'pending',
      reused: true,
    });
    // A session saved by an older notarize (no `signed` kept): --signed cannot be checked, so it is refused too.
    const older = { ...store.readPending(hash)! };
    delete older.signed;
    await store.savePending(older);
    const unknown = await rejectionOf(register(deps, input(hash, { signed: true })), UsageError);
    expect(unknown.message).toBe(
      `a pending session for ${hash} was requested with \`signed\` unknown (the saved session does not say); nothing was sent`,
    );
    expect(called()).toEqual(['request']);
    // Completed as requested when the caller says so (a pending Merkle root: aggregate.ts warns instead).
    expect(
      await register(
        deps,
        input(hash, { description: 'other', descriptionGiven: true, asRequested: true, complete: false }),
      ),
    ).toMatchObject({ kind: 'pending', reused: true });
    expect(await register(deps, input(hash, { description: 'copy.txt' }))).toMatchObject({ kind: 'completed' });
    expect(forfaitBodies()).toEqual([entry.sessionJson]);
  });
  it('an unread answer to the request step is marked: a re-run refuses to ask again; --force asks anew and clears it', async () => {
    const hash = sha256('unread request');
    fault('request:html*1');
    const { store, deps } = world();
    const error = await rejectionOf(register(deps, input(hash)), UnreadableAnswerError);
    expect(error.hint).toContain(`\`notarize complete ${hash} --use-active-subscription\``);
    expect(store.readUnanswered(hash)).toEqual({
      hash,
      description: `document ${hash.slice(0, 8)}`,
      requestedAt: NOW.toISOString(),
    });

    const again = await rejectionOf(register(deps, input(hash)), ProtocolError);
    expect(again.message).toBe(
      `the registration request for ${hash} was answered 2xx at ${NOW.toISOString()}, but the answer could not be read; ` +
        'notarize does not request it again on its own',
    );
    expect(again.hint).toBe(error.hint);
    expect(called()).toEqual(['request']);

    expect(await register(deps, input(hash, { force: true }))).toMatchObject({ kind: 'completed' });
    expect(store.readUnanswered(hash)).toBeUndefined();
  });

  it('an unread request step finished with the active subscription after a failed try: no mark left behind', async () => {
    const hash = sha256('unread, then active subscription twice');
    fault('request:truncated*1');
    const { store, deps } = world();
    await rejectionOf(register(deps, input(hash)), UnreadableAnswerError);
    expect(store.readUnanswered(hash)).toBeDefined();
    fault('forfait:status=503@1*1');
    await rejectionOf(complete(deps, hash, { kind: 'active-subscription' }), TransientError);
    // The session read is pending now, and is what the next `complete` (--all too) finishes.
    expect(store.readUnanswered(hash)).toBeUndefined();
    expect(store.readPending(hash)).toBeDefined();
    expect(await complete(deps, hash, { kind: 'store', resendUnread: false })).toMatchObject({ kind: 'completed' });
    expect(await complete(deps, hash, { kind: 'store' })).toMatchObject({ kind: 'already-registered' });
  });

  it('a hash in the ledger that a store of an older notarize also marks unread: complete clears the mark', async () => {
    const hash = sha256('recorded and marked');
    const { store, deps } = world();
    expect(await register(deps, input(hash))).toMatchObject({ kind: 'completed' });
    await store.markUnanswered({ hash, description: 'd', requestedAt: NOW.toISOString() });
    expect(store.readUnanswered(hash)).toBeDefined();
    expect(await complete(deps, hash, { kind: 'store' })).toMatchObject({ kind: 'already-registered' });
    expect(store.readUnanswered(hash)).toBeUndefined();
  });

  it('an unread answer to the request step whose mark cannot be saved is still reported with what to do', async () => {
    const hash = sha256('unmarked');
    fault('request:html*1');
    const store = plantLink(newStore(), 'unanswered');
    const error = await rejectionOf(register(world({ store }).deps, input(hash)), UnreadableAnswerError);
    expect(error.hint).toContain(`\`notarize pending drop ${hash}\` (or, for a document, register --force)`);
    expect(readdirSync(join(store.dir, 'unanswered'))).toEqual([]);
  });

  it('a request answer of the wrong shape that is a JSON object is kept as pending, exactly as received', async () => {
    const hash = sha256('odd session');
    fault('request:wrong-shape*1');
    const { store, deps } = world();
    const error = await rejectionOf(register(deps, input(hash)), ProtocolError);
    expect(error).not.toBeInstanceOf(InvalidAnswerError);
    expect(error.message).toMatch(/userId.*; the answer was kept as pending$/);
    expect(error.hint).toContain(`\`notarize complete ${hash}\` sends it back as received`);
    expect(error.cause).toBeInstanceOf(InvalidAnswerError);
    const kept = store.readPending(hash);
    expect(kept?.sessionJson).toBe((error.cause as InvalidAnswerError).raw);
    expect(JSON.parse(kept!.sessionJson)).toMatchObject({ userId: '1390' });
    expect(called()).toEqual(['request']);
    // Sent only when named: a re-run of register and complete --all refuse it, nothing sent.
    for (const run of [register(deps, input(hash)), complete(deps, hash, { kind: 'store', resendUnread: false })]) {
      const refused = await rejectionOf(run, ProtocolError);
      expect(refused.message).toBe(
        `the session kept for ${hash} is not of the shape the service documents; notarize does not send it on its own`,
      );
      expect(refused.hint).toContain(`\`notarize complete ${hash}\` sends it back as received`);
    }
    expect(called()).toEqual(['request']);
    // Named: sent back exactly as received (the sandbox refuses a userId of the wrong type).
    await expect(complete(deps, hash, { kind: 'store' })).rejects.toThrow();
    expect(forfaitBodies()).toEqual([kept!.sessionJson]);
  });

  // Fake: the sandbox's wrong-shape fault keeps a request answer a JSON object.
  it.each(['[]', 'null', '5', '"a string"'])(
    'a request answer of the wrong shape that is no object (%s) passes unchanged, and nothing is kept',
    async (raw) => {
      const hash = sha256(`not an object ${raw}`);
      // What the real client does with such a body.
      const api = fakeApi({
        requestRegistration: () =>
          Promise.resolve().then(() =>
            parseAnswer(raw, subscriptionSessionSchema, 'answer to the registration request'),
          ),
      });
      const { store, deps } = world({ api });
      const error = await rejectionOf(register(deps, input(hash)), InvalidAnswerError);
      expect(error.raw).toBe(raw);
      expect(error.hint).toBeUndefined();
      expect(store.readPending(hash)).toBeUndefined();
    },
  );

  it('a session that cannot be saved after the request step: exit 1, the session quoted so it is not lost', async () => {
    const hash = sha256('unsaved session');
    const store = plantLink(newStore(), 'pending');
    const error = await rejectionOf(register(world({ store }).deps, input(hash)), NotarizeError);
    expect(error).not.toBeInstanceOf(UsageError);
    expect(error).toMatchObject({ code: 'store_write', exitCode: 1 });
    expect(error.message).toMatch(
      new RegExp(`^the session for ${hash} could not be saved: cannot use the store directory .*symbolic link`),
    );
    expect(error.hint).toMatch(
      new RegExp(
        `^save it to a file and finish with \`notarize complete ${hash} --session <file>\`; the session the service sent: \\{.*"userId":1390`,
      ),
    );
    expect(error.cause).toBeInstanceOf(StoreError);
  });

  it('a completion answered unreadably marks the session: register never sends it again, complete does', async () => {
    const hash = sha256('unread forfait');
    fault('forfait:html*1');
    const { store, deps } = world();
    const error = await rejectionOf(register(deps, input(hash)), UnreadableAnswerError);
    // Its own hint first, then what to do about the session.
    expect(error.hint).toBe(
      'the service may be down or behind a proxy; check the base URL; ' +
        `the service may have completed it (see ${page(hash)}); \`notarize complete ${hash}\` sends the session again ` +
        '(if it went through, the service answers 409 and the session is retired), ' +
        `or \`notarize pending drop ${hash}\` puts it aside`,
    );
    expect(store.readPending(hash)?.forfaitUnreadAt).toBe(NOW.toISOString());

    const again = await rejectionOf(register(deps, input(hash)), ProtocolError);
    expect(again.message).toBe(
      `the completion of ${hash} was sent at ${NOW.toISOString()} and answered, ` +
        'but the answer could not be read, or was no record of it; notarize does not send it again on its own ' +
        `(an answer kept aside is in ${join(store.dir, 'quarantine')})`,
    );
    expect(called()).toEqual(['request', 'forfait']);

    // Nor does complete --all (resendUnread: false): only its hash, named, does.
    const all = await rejectionOf(complete(deps, hash, { kind: 'store', resendUnread: false }), ProtocolError);
    expect(all.message).toBe(again.message);
    expect(called()).toEqual(['request', 'forfait']);

    expect(await complete(deps, hash, { kind: 'store' })).toMatchObject({ kind: 'completed', reusedSession: true });
    expect(store.readPending(hash)).toBeUndefined();
  });

  it('an unreadable completion with no hint of its own gets only what to do about the session', async () => {
    const hash = sha256('undecodable forfait');
    fault('forfait:undecodable*1');
    const error = await rejectionOf(register(world().deps, input(hash)), UnreadableAnswerError);
    expect(error.hint).toMatch(/^the service may have completed it \(see /);
  });

  it('an unreadable completion whose mark cannot be saved still says what to do; the session is kept as it was', async () => {
    const hash = sha256('unmarkable');
    const { store: first, entry } = await requestOnly(hash);
    const store = plantLink(first, 'pending');
    fault('forfait:html*1');
    const error = await rejectionOf(complete(world({ store }).deps, hash, { kind: 'store' }), UnreadableAnswerError);
    expect(error.hint).toContain(`\`notarize complete ${hash}\` sends the session again`);
    expect(store.readPending(hash)).toEqual(entry);
  });
});

describe('the lock', () => {
  it('a full disk met while making it: a usage error saying so and that nothing was sent', async () => {
    const hash = sha256('full at lock');
    const store = new FullDiskStore(join(bed.root, 'full'), 'lock');
    const error = await rejectionOf(register(world({ store }).deps, input(hash)), UsageError);
    expect(error).toMatchObject({ code: 'disk_refused', exitCode: 2 });
    expect(error.message).toBe(`no space left on the device holding ${store.dir} (ENOSPC); nothing was sent`);
    expect(bed.sandbox.calls).toEqual([]);
  });

  it('any other failure while making it passes unchanged', async () => {
    const hash = sha256('linked locks');
    const store = plantLink(newStore(), 'locks');
    const error = await rejectionOf(complete(world({ store }).deps, hash, { kind: 'store' }), StoreError);
    expect(error.message).toContain(`${join(store.dir, 'locks')}: it is a symbolic link`);
  });

  it('once it is held, even a full disk is exit 1 with the answer quoted: something was sent', async () => {
    const hash = sha256('full at session');
    const store = new FullDiskStore(join(bed.root, 'full'), 'pending');
    const error = await rejectionOf(register(world({ store }).deps, input(hash)), NotarizeError);
    expect(error).toMatchObject({ code: 'store_write', exitCode: 1 });
    expect(error.message).toBe(`the session for ${hash} could not be saved: ENOSPC: no space left on device, open`);
    expect(called()).toEqual(['request']);
  });
});

describe('the session of a registration recorded', () => {
  it('a disk refusing to let it go: the registration stands, recorded; the next run says why it cannot remove it', async () => {
    const hash = sha256('session kept by a read-only folder');
    const dir = join(bed.root, 'no-drop');
    const outcome = await register(world({ store: new FullDiskStore(dir, 'drop') }).deps, input(hash));
    expect(outcome).toMatchObject({ kind: 'completed', entry: { hash } });
    const store = new ServiceStore(dir, bed.url);
    expect(store.readRecord(hash)?.recordJson).toContain(hash);
    expect(existsSync(store.pendingFile(hash))).toBe(true);
    // Still refused: exit 2 saying so, nothing sent; once allowed, the leftover goes and nothing is sent either.
    const mark = bed.sandbox.calls.length;
    const refused = await rejectionOf(
      register(world({ store: new FullDiskStore(dir, 'leftover') }).deps, input(hash)),
      UsageError,
    );
    expect(refused).toMatchObject({ code: 'disk_refused', exitCode: 2 });
    expect(refused.message).toBe(`permission is denied in ${dir} (EACCES); nothing was sent`);
    const again = await complete(world({ store }).deps, hash, { kind: 'store' });
    expect(again).toMatchObject({ kind: 'already-registered', hash });
    expect(existsSync(store.pendingFile(hash))).toBe(false);
    expect(bed.sandbox.calls.slice(mark)).toEqual([]);
  });

  it('any other failure to let it go, or to remove it as a leftover, passes unchanged', async () => {
    const boom = () => new Error('boom');
    const hash = sha256('session removal fails otherwise');
    const dir = join(bed.root, 'drop-boom');
    await rejectionOf(register(world({ store: new FullDiskStore(dir, 'drop', boom) }).deps, input(hash)), Error);
    const leftover = new FullDiskStore(dir, 'leftover', boom);
    const error = await rejectionOf(complete(world({ store: leftover }).deps, hash, { kind: 'store' }), Error);
    expect(error.message).toBe('boom');
  });
});

describe('a lock held across steps (holdAcross)', () => {
  it('the flow runs under it when told so, and another holder waits until it is let go', async () => {
    const hash = sha256('held across');
    const { deps, store } = world();
    const release = await holdAcross(deps, hash, 0);
    try {
      expect(store.hasLock(hash)).toBe(true);
      // Not told: another taker (here, with no wait) finds it held.
      const waiter = await rejectionOf(register({ ...deps, lockWaitMs: 0 }, input(hash)), TransientError);
      expect(waiter.message).toContain('is working on the same hash');
      expect(called()).toEqual([]);
      // Told: it runs under the lock as held, and leaves it held.
      const outcome = await register({ ...deps, heldAcross: new Set([hash]) }, input(hash));
      expect(outcome.kind).toBe('completed');
      expect(store.hasLock(hash)).toBe(true);
    } finally {
      release();
      release();
    }
    expect(store.hasLock(hash)).toBe(false);
  });

  it('beforeRequest runs under the lock, before the request step: throwing there sends nothing', async () => {
    const hash = sha256('not to be requested');
    const { deps, store } = world();
    const seen: boolean[] = [];
    const stop = new TransientError('placed under a root meanwhile', { notProcessed: true });
    const beforeRequest = (asked: string) => {
      seen.push(asked === hash && store.hasLock(hash));
      return Promise.reject(stop);
    };
    expect(await rejection(register({ ...deps, beforeRequest }, input(hash)))).toBe(stop);
    expect(seen).toEqual([true]);
    expect(called()).toEqual([]);
    expect(store.hasLock(hash)).toBe(false);
  });
});

describe('complete', () => {
  it('a hash in the ledger: already registered, a session left beside it removed, nothing sent', async () => {
    const hash = sha256('complete done');
    const { store, deps } = world();
    await register(deps, input(hash));
    await store.savePending({
      hash,
      description: '',
      custody: false,
      savedAt: '2000-01-01T00:00:00.000Z',
      sessionJson: '{}',
    });
    const sent = bed.sandbox.calls.length;
    for (const source of [{ kind: 'store' }, { kind: 'given', json: '{}' }] as SessionSource[]) {
      expect(await complete(deps, hash, source)).toEqual({
        kind: 'already-registered',
        hash,
        entry: store.readRecord(hash),
      });
    }
    expect(store.readPending(hash)).toBeUndefined();
    expect(bed.sandbox.calls).toHaveLength(sent);
  });

  it('from the store without a pending session: a usage error saying how to give one', async () => {
    const hash = sha256('nothing pending');
    const error = await rejectionOf(complete(world().deps, hash, { kind: 'store' }), UsageError);
    expect(error).toMatchObject({ code: 'no_pending_session', exitCode: 2 });
    expect(error.hint).toContain('--session <file|->');
  });

  it('from the store after an unread request step: no session to send, and the way out rather than "register it first"', async () => {
    const hash = sha256('unread request, then complete');
    fault('request:html*1');
    const { deps } = world();
    const first = await rejectionOf(register(deps, input(hash)), UnreadableAnswerError);
    const error = await rejectionOf(complete(deps, hash, { kind: 'store' }), ProtocolError);
    expect(error.message).toBe(
      `the registration request for ${hash} was answered 2xx at ${NOW.toISOString()}, but the answer could not be read; ` +
        'notarize does not request it again on its own',
    );
    expect(error.hint).toBe(first.hint);
    expect(called()).toEqual(['request']);
  });

  it('its login failing: no completion was sent, and nothing says it may have been; the session stays as it was (r111)', async () => {
    const hash = sha256('a login that fails before forfait');
    const { store, entry } = await requestOnly(hash);
    const policy = { retries: 0, baseDelayMs: 1, maxDelayMs: 1 };
    // A token had only by logging in now, as `complete` does with an API key and no stored token.
    const api = new ApiClient(transport(), policy, {
      authorize: (send) => logIn(transport(), policy, bed.sandbox.apiKey).then((token) => send(token)),
    });
    for (const spec of ['login:status=500*1', 'login:wrong-shape*1', 'login:truncated*1']) {
      fault(spec);
      const error = await rejectionOf(complete(world({ store, api }).deps, hash, { kind: 'store' }), NotarizeError);
      expect(error.hint, spec).toContain(
        `the completion was not sent; the session is kept: finish with \`notarize complete ${hash}\``,
      );
      expect(error.hint, spec).not.toContain('may have completed');
      expect(store.readPending(hash), spec).toEqual(entry);
    }
    expect(called()).toEqual(['request']);
    // The login answered, it completes as ever.
    expect(await complete(world({ store, api }).deps, hash, { kind: 'store' })).toMatchObject({ kind: 'completed' });
  });

  it('answered 401, then the login to replace the token fails: the completion was not taken, the session stays (r112)', async () => {
    const hash = sha256('a forfait refused its token, then a failed login');
    const { store, entry } = await requestOnly(hash);
    const policy = { retries: 0, baseDelayMs: 1, maxDelayMs: 1 };
    const apiKey = bed.sandbox.apiKey;
    for (const [i, spec] of ['login:status=500*1', 'login:html*1'].entries()) {
      // The real credentials: a token that works, then a 401 that makes them log in with the key again.
      const credentials = new TokenCredentials({
        baseUrl: bed.url,
        store: new Store(join(bed.root, `credentials-${i}`)),
        envToken: await logIn(transport(), policy, apiKey),
        apiKey,
        login: (key) => logIn(transport(), policy, key),
      });
      const api = new ApiClient(transport(), policy, credentials);
      fault(`forfait:status=401*1,${spec}`);
      const error = await rejectionOf(complete(world({ store, api }).deps, hash, { kind: 'store' }), NotarizeError);
      expect(error.hint, spec).toContain(
        'the completion was refused its token (401), so not taken, and logging in again failed; ' +
          `the session is kept: finish with \`notarize complete ${hash}\``,
      );
      expect(error.hint, spec).not.toContain('may have completed');
      expect(store.readPending(hash), spec).toEqual(entry);
    }
    expect(called()).toEqual(['request', 'forfait', 'forfait']);
  });

  it('a completion waiting to be sent again (503 with Retry-After) is no completion under way: step waiting, then completing again (r119)', async () => {
    const hash = sha256('a forfait retried after a 503');
    const { store } = await requestOnly(hash);
    const policy = { retries: 1, baseDelayMs: 1, maxDelayMs: 1 };
    const token = await logIn(transport(), policy, bed.sandbox.apiKey);
    const api = new ApiClient(transport(), policy, { authorize: (send) => send(token) });
    fault('forfait:status=503@0*1');
    const { deps, steps } = world({ store, api });
    expect(await complete(deps, hash, { kind: 'store' })).toMatchObject({ kind: 'completed' });
    expect(steps).toEqual(['completing', 'waiting', 'completing', 'saving']);
    expect(called()).toEqual(['request', 'forfait', 'forfait']);
  });

  it('from the store: forfait with the stored session, the record in the ledger', async () => {
    const hash = sha256('from the store');
    const { store, entry } = await requestOnly(hash);
    const { deps, steps } = world({ store });
    const outcome = await complete(deps, hash, { kind: 'store' });
    expect(outcome).toMatchObject({ kind: 'completed', reusedSession: true, entry: { hash } });
    expect(outcome).not.toHaveProperty('custody');
    expect(forfaitBodies()).toEqual([entry.sessionJson]);
    expect(steps).toEqual(['completing', 'saving']);
  });

  it('a session requested over the record (register --force --no-complete) is completed; a leftover, however dated, is not', async () => {
    const hash = sha256('registered again');
    const { store } = await requestOnly(hash);
    await complete(world({ store }).deps, hash, { kind: 'store' });
    const record = store.readRecord(hash)!;
    // Asked for again (a service that opens a session for a hash it has; the sandbox answers 409):
    // the session says which record it was asked for after.
    const api = fakeApi({
      requestRegistration: () =>
        Promise.resolve(
          parseAnswer(
            readFixture('session-free-plan.json'),
            subscriptionSessionSchema,
            'answer to the registration request',
          ),
        ),
    });
    const again = await register(world({ api, store }).deps, input(hash, { force: true, complete: false }));
    expect(again).toMatchObject({ kind: 'pending' });
    const asked = store.readPending(hash)!;
    expect(asked.follows).toBe(record.completedAt);
    const before = forfaitBodies().length;
    // The sandbox has it: a 409, read as already registered, the session moved aside.
    expect(await complete(world({ store }).deps, hash, { kind: 'store' })).toMatchObject({
      kind: 'already-registered',
      hash,
    });
    expect(forfaitBodies()).toHaveLength(before + 1);
    expect(store.readPending(hash)).toBeUndefined();
    // Beside the record, a damaged session, or one not asked for after this very record, is a leftover:
    // the ledger answers, nothing sent, whatever its savedAt says (written by a host whose clock is an
    // hour ahead, say).
    const later = new Date(Date.parse(record.completedAt) + 3_600_000).toISOString();
    const leftovers = [
      { ...asked, follows: undefined, savedAt: later },
      { ...asked, follows: '2000-01-01T00:00:00.000Z', savedAt: later },
    ];
    writeFileSync(store.pendingFile(hash), '{');
    expect(await complete(world({ store }).deps, hash, { kind: 'store' })).toMatchObject({
      kind: 'already-registered',
      hash,
    });
    for (const leftover of leftovers) {
      await store.savePending(leftover);
      expect(store.isLeftover(leftover)).toBe(true);
      const refused = await complete(world({ store }).deps, hash, { kind: 'store' });
      expect(refused, JSON.stringify(leftover.follows)).toMatchObject({ kind: 'already-registered', hash });
      // One of an earlier record goes; one with no mark dated after the record stays (it may be a paid session).
      expect(store.readPending(hash) === undefined, JSON.stringify(leftover.follows)).toBe(
        leftover.follows !== undefined,
      );
      rmSync(store.pendingFile(hash), { force: true });
    }
    expect(forfaitBodies()).toHaveLength(before + 1);
  });

  it('a session given by hand is kept, sent exactly as given, and completing clears an unread request step', async () => {
    const hash = sha256('given');
    // The request step went through, but its answer was cut: the sandbox holds a session notarize never saw.
    fault('request:truncated*1');
    const { store, deps } = world();
    expect(await rejection(register(deps, input(hash)))).toBeInstanceOf(UnreadableAnswerError);
    expect(store.readUnanswered(hash)).toBeDefined();
    const given = `${JSON.stringify(JSON.parse((await sandboxApi().activeSubscription()).raw), null, 2)}\n`;

    const outcome = await complete(deps, hash, { kind: 'given', json: given, description: 'by hand' });
    // No session pending was used (present() says 'with the pending session' of one that was).
    expect(outcome).toMatchObject({ kind: 'completed', reusedSession: false, entry: { hash } });
    expect(forfaitBodies()).toEqual([given]);
    expect(store.readUnanswered(hash)).toBeUndefined();
    expect(store.readPending(hash)).toBeUndefined();
  });

  it('a session given by hand for a hash the service does not know (404) is not kept', async () => {
    const hash = sha256('unknown to the service');
    const { store, deps } = world();
    // Even after a request step answered unreadably: its mark goes with the session saved, so the hint
    // names no `pending drop`, which would find nothing to drop (the hints review).
    await store.markUnanswered({ hash, description: 'unread', requestedAt: new Date().toISOString() });
    const given = (await sandboxApi().activeSubscription()).raw;
    const error = await rejectionOf(complete(deps, hash, { kind: 'given', json: given }), ServiceRefusedError);
    expect(error).toMatchObject({ status: 404 });
    expect(error.hint).toBe(
      `the service does not know ${hash}, so the session given was not kept; register the document first (\`notarize register\`)`,
    );
    expect(store.readPending(hash)).toBeUndefined();
    expect(store.readUnanswered(hash)).toBeUndefined();
  });

  it('a 404 for a session given by hand that can no longer be removed: the 404, saying where it is kept', async () => {
    const hash = sha256('unknown to the service, session stuck');
    const { store, deps } = world();
    // The session's file turns into a folder while forfait is on the wire: its removal fails (EISDIR),
    // as it would in a store made read-only meanwhile.
    fault('forfait:latency=300');
    const given = (await sandboxApi().activeSubscription()).raw;
    const completing = rejectionOf(complete(deps, hash, { kind: 'given', json: given }), ServiceRefusedError);
    await vi.waitFor(() => expect(bed.calls('forfait')).toBe(1), { timeout: 5_000, interval: 2 });
    rmSync(store.pendingFile(hash));
    mkdirSync(join(store.pendingFile(hash), 'inside'), { recursive: true });
    const error = await completing;
    expect(error).toMatchObject({ status: 404 });
    expect(error.hint).toBe(
      `the service does not know ${hash}; the session given could not be removed ` +
        `(EISDIR: illegal operation on a directory, unlink '${store.pendingFile(hash)}'): ` +
        `\`notarize pending drop ${hash}\` puts it aside once the store is writable; ` +
        'register the document first (`notarize register`)',
    );
  });

  it('a session given by hand that the service refuses otherwise is kept, to finish later', async () => {
    const hash = sha256('refused given');
    await requestOnly(hash);
    const { store, deps } = world();
    const given = '{"sessionId":"not the one","userId":1390}';
    const error = await rejectionOf(complete(deps, hash, { kind: 'given', json: given }), ServiceRefusedError);
    expect(error).toMatchObject({ status: 400 });
    // No hint of its own: only what to do about the session.
    expect(error.hint).toBe(
      `the session is kept in ${store.pendingFile(hash)}; if the service will never accept it, ` +
        `\`notarize pending drop ${hash}\` puts it aside`,
    );
    expect(store.readPending(hash)).toEqual({
      hash,
      description: '',
      custody: false,
      savedAt: NOW.toISOString(),
      sessionJson: given,
    });
  });

  it('a session given by hand that meets a failure other than a refusal is kept too', async () => {
    const hash = sha256('busy given');
    const { entry } = await requestOnly(hash);
    fault('forfait:status=503@1*4');
    const { store, deps } = world();
    const error = await rejectionOf(complete(deps, hash, { kind: 'given', json: entry.sessionJson }), TransientError);
    expect(error.hint).toBe(
      `the service is unavailable or busy; try again later; the session is kept: finish with \`notarize complete ${hash}\``,
    );
    expect(store.readPending(hash)?.sessionJson).toBe(entry.sessionJson);
  });

  it('a session given by hand never replaces a pending one, which stays until the record is in', async () => {
    const hash = sha256('given beside pending');
    const { store, entry } = await requestOnly(hash);
    const given = (await sandboxApi().activeSubscription()).raw;
    const { deps } = world({ store });
    fault('forfait:status=400*1');
    expect(await rejection(complete(deps, hash, { kind: 'given', json: given }))).toBeInstanceOf(ServiceRefusedError);
    expect(store.readPending(hash)).toEqual(entry);

    expect(await complete(deps, hash, { kind: 'given', json: given })).toMatchObject({ kind: 'completed' });
    expect(forfaitBodies()).toEqual([given, given]);
    expect(store.readPending(hash)).toBeUndefined();
  });

  it("a 409 after another process completed it meanwhile (its lock taken over): the ledger's record, not null", async () => {
    const hash = sha256('completed by the process that took over');
    const { store, entry } = await requestOnly(hash);
    const { deps } = world({ store });
    // As the process that took the lock over does while this one is stopped: completes, saves the record.
    deps.beforeCompletion = async () => {
      const answer = await sandboxApi().completeRegistration(hash, entry.sessionJson);
      await store.saveRecord({ hash, completedAt: NOW.toISOString(), recordJson: answer.raw });
    };
    const outcome = await complete(deps, hash, { kind: 'store' });
    expect(outcome).toMatchObject({ kind: 'already-registered', entry: { hash } });
  });

  it('a 409 whose record is damaged meanwhile: already registered, the damaged record left to who reads it', async () => {
    const hash = sha256('record damaged meanwhile');
    const { store, entry } = await requestOnly(hash);
    const { deps } = world({ store });
    deps.beforeCompletion = async () => {
      await sandboxApi().completeRegistration(hash, entry.sessionJson);
      mkdirSync(join(store.ledgerFile(hash), '..'), { recursive: true });
      writeFileSync(store.ledgerFile(hash), '{ not json');
    };
    expect(await complete(deps, hash, { kind: 'store' })).toMatchObject({
      kind: 'already-registered',
      entry: undefined,
    });
  });

  it('no session, but a 409 kept: the same answer again, nothing sent; a session retired for another reason is none', async () => {
    // A session retired by a forfait answered 409, and a request step answered 409 (no session): each
    // is the service's word that it has the hash.
    const retired = sha256('retired by a 409');
    const { store, entry } = await requestOnly(retired);
    await sandboxApi().completeRegistration(retired, entry.sessionJson);
    const { deps } = world({ store });
    expect(await complete(deps, retired, { kind: 'store' })).toMatchObject({ kind: 'already-registered' });
    const asked = sha256('a request step answered 409');
    const elsewhere = await requestOnly(asked);
    await sandboxApi().completeRegistration(asked, elsewhere.entry.sessionJson);
    expect(await register(deps, input(asked))).toMatchObject({ kind: 'already-registered' });
    const calls = called().length;
    for (const hash of [retired, asked]) {
      expect(await complete(deps, hash, { kind: 'store' })).toMatchObject({
        kind: 'already-registered',
        entry: undefined,
        service: { message: expect.stringMatching(/answered 409 for this document before/) as string },
      });
    }
    expect(called()).toHaveLength(calls);
    // Retired by hand (`pending drop`): no word of the service's; no session to complete.
    const dropped = sha256('dropped by hand');
    await requestOnly(dropped, store);
    await store.retirePending(dropped, 'dropped by hand (notarize pending drop)', NOW);
    expect(await rejection(complete(deps, dropped, { kind: 'store' }))).toMatchObject({ code: 'no_pending_session' });
  });

  it("--custody over a request step answered unreadably: its mark keeps the file, which the active subscription's completion sends", async () => {
    const hash = sha256('custody, request unread');
    fault('request:truncated*1');
    const { store, deps } = world();
    await rejection(register(deps, input(hash, { custody: true, file: FILE })));
    expect(store.readUnanswered(hash)).toMatchObject({ custody: true, file: FILE });
    const outcome = await complete(deps, hash, { kind: 'active-subscription' });
    expect(outcome).toMatchObject({ kind: 'completed', custody: { metadataSent: true } });
    expect(called()).toContain('file');
  });

  it('a request step answered 409 again keeps no second mark of it', async () => {
    const hash = sha256('told 409 twice');
    const elsewhere = await requestOnly(hash);
    await sandboxApi().completeRegistration(hash, elsewhere.entry.sessionJson);
    const { store, deps } = world();
    const marks = async () => (await store.retirements(hash)).get(hash) ?? [];
    for (let run = 0; run < 3; run++) {
      expect(await register(deps, input(hash))).toMatchObject({ kind: 'already-registered' });
      expect(await marks()).toHaveLength(1);
    }
  });

  it('with the active subscription: read, kept, then sent, for a hash requested elsewhere', async () => {
    const hash = sha256('active');
    await requestOnly(hash);
    const { store, deps } = world();
    const outcome = await complete(deps, hash, { kind: 'active-subscription' });
    expect(outcome).toMatchObject({ kind: 'completed', reusedSession: false });
    expect(called()).toEqual(['request', 'active', 'forfait']);
    expect(JSON.parse(forfaitBodies()[0]!)).toEqual(JSON.parse((await sandboxApi().activeSubscription()).raw));
    expect(store.readRecord(hash)).toBeDefined();
  });

  it('with the active subscription beside a pending session: sent, the pending one left to the record', async () => {
    const hash = sha256('active beside pending');
    const { store } = await requestOnly(hash);
    const outcome = await complete(world({ store }).deps, hash, { kind: 'active-subscription' });
    expect(outcome).toMatchObject({ kind: 'completed' });
    expect(store.readPending(hash)).toBeUndefined();
  });

  it('a given session that cannot be saved: on a full disk, a usage error (nothing was sent)', async () => {
    const hash = sha256('given on a full disk');
    const store = new FullDiskStore(join(bed.root, 'full'), 'pending');
    const error = await rejection(complete(world({ store }).deps, hash, { kind: 'given', json: '{}' }));
    expect(error).toMatchObject({ code: 'disk_refused', exitCode: 2 });
    expect(called()).toEqual([]);
  });

  it('a given session that cannot be saved otherwise: exit 1, quoted whole however long, and carried', async () => {
    const hash = sha256('given, too long');
    const store = plantLink(newStore(), 'pending');
    const given = JSON.stringify({ sessionId: 'x'.repeat(5000) });
    const error = await rejectionOf(
      complete(world({ store }).deps, hash, { kind: 'given', json: given }),
      NotarizeError,
    );
    expect(error).toMatchObject({ code: 'store_write', exitCode: 1 });
    expect(error.hint).toBe(
      `save it to a file and finish with \`notarize complete ${hash} --session <file>\`; ` +
        `the session the service sent: ${given}`,
    );
    expect(error.unsaved).toEqual({ what: 'session', text: given });
    expect(called()).toEqual([]);
  });
});

describe('the end of a registration', () => {
  /** A session pending in `store` whose hash the service completed meanwhile (with another session). */
  async function completedElsewhere(label: string) {
    const hash = sha256(label);
    const { store, entry } = await requestOnly(hash);
    await register(world().deps, input(hash));
    return { hash, store, entry };
  }

  it('a 409 from forfait retires the session: already registered, the session kept aside with why', async () => {
    const { hash, store, entry } = await completedElsewhere('forfait 409');
    const outcome = await complete(world({ store }).deps, hash, { kind: 'store' });
    const message = `the hash ${hash} is already registered`;
    expect(outcome).toEqual({
      kind: 'already-registered',
      hash,
      entry: undefined,
      service: { message, retiredSession: store.retiredFile(hash, NOW) },
    });
    expect(store.readPending(hash)).toBeUndefined();
    expect(JSON.parse(readFileSync(store.retiredFile(hash, NOW), 'utf8'))).toEqual({
      schemaVersion: 1,
      ...entry,
      retiredAt: NOW.toISOString(),
      retiredBecause: `forfait answered 409: ${message}`,
    });
  });

  // Fake: the sandbox's 409 always carries a message.
  it('a 409 from forfait without a message retires the session all the same', async () => {
    const hash = sha256('silent 409');
    const { store } = await requestOnly(hash);
    const refusal = new ServiceRefusedError(409, `POST ${bed.url}/api/v2/registration/${hash}/forfait answered 409`);
    const api = fakeApi({ completeRegistration: (_h, _s, onSent) => sentThen(onSent, refusal) });
    const outcome = await complete(world({ api, store }).deps, hash, { kind: 'store' });
    expect(outcome).toMatchObject({ kind: 'already-registered', service: { message: undefined } });
    const retired = JSON.parse(readFileSync(store.retiredFile(hash, NOW), 'utf8')) as { retiredBecause: string };
    expect(retired.retiredBecause).toBe('forfait answered 409: ');
  });

  it('a session that cannot be retired after a 409: exit 1, saying how to retire it', async () => {
    const { hash, store: first, entry } = await completedElsewhere('unretirable');
    const store = plantLink(first, 'retired');
    const error = await rejectionOf(complete(world({ store }).deps, hash, { kind: 'store' }), NotarizeError);
    expect(error).toMatchObject({ code: 'store_write', exitCode: 1 });
    expect(error.message).toMatch(
      new RegExp(`^the service says ${hash} is already registered, but its pending session could not be moved aside: `),
    );
    expect(error.hint).toBe(`retire it with \`notarize pending drop ${hash}\``);
    expect(store.readPending(hash)).toEqual(entry);
  });

  it("says 'saving' once forfait is answered and before the record is written: what is left is local", async () => {
    const hash = sha256('saving step');
    const { store, deps } = world();
    const seen: { step: string; calls: (string | null)[]; record: boolean; pending: boolean }[] = [];
    deps.onStep = (step) =>
      seen.push({
        step,
        calls: called(),
        record: existsSync(store.ledgerFile(hash)),
        pending: existsSync(store.pendingFile(hash)),
      });
    await register(deps, input(hash));
    expect(seen.at(-1)).toEqual({ step: 'saving', calls: ['request', 'forfait'], record: false, pending: true });
    expect(existsSync(store.ledgerFile(hash))).toBe(true);
  });

  it('beforeCompletion runs once the session is saved and before forfait; throwing stops there, the session kept', async () => {
    const hash = sha256('before completion');
    const { store, deps } = world();
    const seen: { hash: string; calls: (string | null)[]; pending: boolean }[] = [];
    deps.beforeCompletion = (h) => {
      seen.push({ hash: h, calls: called(), pending: existsSync(store.pendingFile(h)) });
      return Promise.reject(new Error('the manifest could not be written'));
    };
    const error = await rejection(register(deps, input(hash)));
    expect((error as Error).message).toBe('the manifest could not be written');
    expect(seen).toEqual([{ hash, calls: ['request'], pending: true }]);
    expect(called()).toEqual(['request']);
    expect(store.readPending(hash)).toBeDefined();
    // Once it succeeds, the registration completes with the kept session.
    deps.beforeCompletion = () => Promise.resolve();
    expect(await register(deps, input(hash))).toMatchObject({ kind: 'completed', reusedSession: true });
  });

  describe('a lock taken over while this process was stopped (SIGSTOP, a paused VM)', () => {
    /** What another notarize does once this one's lease has run out: the lock at the path is its own. */
    const takeOver = (store: ServiceStore, hash: string) => {
      const file = store.lockFile(hash);
      renameSync(file, `${file}.gone`);
      writeFileSync(file, 'another run\n');
    };

    it('the request step answered after the takeover: its session is not saved, nothing more sent, exit 4', async () => {
      const hash = sha256('stopped during the request step');
      const store = newStore();
      const api = fakeApi({
        requestRegistration: () => {
          takeOver(store, hash);
          return Promise.resolve(
            parseAnswer(
              readFixture('session-free-plan.json'),
              subscriptionSessionSchema,
              'answer to the registration request',
            ),
          );
        },
      });
      const error = await rejectionOf(register(world({ api, store }).deps, input(hash)), TransientError);
      expect(error.exitCode).toBe(4);
      expect(error.message).toBe(
        `the lock on ${hash} was taken over by another notarize while this one was stopped: ` +
          'its session is not saved, nor its completion sent',
      );
      expect(store.readPending(hash)).toBeUndefined();
      expect(store.readRecord(hash)).toBeUndefined();
    });

    // The look as each attempt goes out, after any wait for its slot (register -j) or its token: a run
    // stopped there past its lease sent a request step over the session of the run that took over, and
    // a forfait over its completion (the containers review).
    it.each([
      [1, 'the request step', 'its request step is not sent, nor its completion', []],
      [2, 'forfait', 'its completion (forfait) is not sent', ['request']],
    ])('taken over as call %i (%s) waited to go out: it does not go, exit 4', async (call, _name, notDone, routes) => {
      const hash = sha256(`stopped while call ${call} waited to go out`);
      const store = newStore();
      let calls = 0;
      const api = sandboxApi({ beforeSend: () => ++calls === call && takeOver(store, hash) });
      const before = bed.sandbox.calls.length;
      const error = await rejectionOf(register(world({ api, store }).deps, input(hash)), TransientError);
      expect(error.message).toBe(
        `the lock on ${hash} was taken over by another notarize while this one was stopped: ${notDone}`,
      );
      expect(error.notProcessed).toBe(true);
      const sent = bed.sandbox.calls.slice(before).map((c) => c.route);
      expect(sent.filter((route) => route !== 'login')).toEqual(routes);
    });

    it('taken over once the session was saved: its forfait is not sent, the session kept for whoever holds the lock', async () => {
      const hash = sha256('stopped before forfait');
      const { store, deps } = world();
      deps.beforeCompletion = (h) => {
        takeOver(store, h);
        return Promise.resolve();
      };
      const error = await rejectionOf(register(deps, input(hash)), TransientError);
      expect(error.message).toBe(
        `the lock on ${hash} was taken over by another notarize while this one was stopped: ` +
          'its completion (forfait) is not sent',
      );
      expect(error.notProcessed).toBe(true);
      expect(called()).toEqual(['request']);
      expect(store.readPending(hash)).toBeDefined();
    });
  });

  describe('custody', () => {
    it('asked of a hash the ledger has without custody: said unsent; with custody (metadata sent): nothing to say', async () => {
      const plain = sha256('registered without custody');
      const { deps } = world();
      await register(deps, input(plain));
      expect(await register(deps, input(plain, { custody: true, file: FILE }))).toMatchObject({
        kind: 'already-registered',
        custody: { metadataSent: false },
      });
      const kept = sha256('registered with custody');
      await register(deps, input(kept, { custody: true, file: FILE }));
      const again = await register(deps, input(kept, { custody: true, file: FILE }));
      expect(again).toMatchObject({ kind: 'already-registered' });
      expect(again).not.toHaveProperty('custody');
    });

    it.each([
      ['with a wallet name', { walletName: 'my wallet' }],
      ['without a wallet name', {}],
    ])('the metadata of the local file is sent after forfait, %s', async (_, wallet) => {
      const hash = sha256(`custody ${JSON.stringify(wallet)}`);
      const { deps, steps } = world();
      const outcome = await register(deps, input(hash, { custody: true, file: FILE, ...wallet }));
      expect(outcome).toMatchObject({ kind: 'completed', custody: { metadataSent: true } });
      expect(steps).toEqual(['requesting', 'completing', 'metadata']);
      expect(bed.sandbox.files.get(hash)).toEqual({
        hash,
        name: FILE.name,
        type: 'application/pdf',
        size: FILE.size,
        lastModified: FILE.lastModified,
        userId: 1390,
        ...wallet,
      });
    });

    it('completing later, the file facts come from the pending session', async () => {
      const hash = sha256('custody later');
      const { store } = await requestOnly(hash, newStore(), { custody: true, file: FILE });
      const outcome = await complete(world({ store }).deps, hash, { kind: 'store' });
      expect(outcome).toMatchObject({ kind: 'completed', custody: { metadataSent: true } });
      expect(bed.sandbox.files.get(hash)).toMatchObject({ name: FILE.name, size: FILE.size });
    });

    it('without a local file, no metadata is sent, and the outcome says why', async () => {
      const hash = sha256('custody without file');
      const { store, deps } = world();
      const outcome = await register(deps, input(hash, { custody: true }));
      expect(outcome).toMatchObject({ kind: 'completed', custody: { metadataSent: false } });
      if (outcome.kind !== 'completed') return;
      // Forfait was sent (paid): exit 1, never the usage error's "nothing was sent".
      expect(outcome.custody?.error).not.toBeInstanceOf(UsageError);
      expect(outcome.custody?.error).toMatchObject({ code: 'custody_unsendable', exitCode: 1 });
      expect(outcome.custody?.error?.message).toBe('custody metadata needs the local file and a valid session');
      expect(called()).toEqual(['request', 'forfait']);
      // Nothing a re-run could send: no metadata kept.
      expect(store.readCustodyOwed(hash)).toBeUndefined();
    });

    it('a metadata call that fails leaves the registration completed, the error in the outcome, the metadata owed', async () => {
      const hash = sha256('custody failed');
      fault('file:status=500*1');
      const { store, deps } = world();
      const outcome = await register(deps, input(hash, { custody: true, file: FILE }));
      expect(outcome).toMatchObject({ kind: 'completed', custody: { metadataSent: false } });
      if (outcome.kind !== 'completed') return;
      expect(outcome.custody?.error).toBeInstanceOf(TransientError);
      expect(outcome.custody?.error?.hint).toMatch(
        new RegExp(
          `^the registration of ${hash} stands; its file metadata was not confirmed as taken; \`notarize complete ${hash}\`, or \`notarize register\` of the file, with this store, sends it`,
        ),
      );
      // The store keeps the metadata as it would have been sent, for a re-run; the record is the service's.
      expect(store.readRecord(hash)?.recordJson).toBe(outcome.entry.recordJson);
      expect(JSON.parse(store.readCustodyOwed(hash)?.metadataJson ?? '{}')).toEqual({
        hash,
        name: FILE.name,
        type: 'application/pdf',
        size: FILE.size,
        lastModified: FILE.lastModified,
        userId: 1390,
      });
      expect(bed.sandbox.files.get(hash)).toBeUndefined();
    });

    it.each([
      ['register', (deps: FlowDeps, hash: string) => register(deps, input(hash, { custody: true, file: FILE }))],
      ['complete', (deps: FlowDeps, hash: string) => complete(deps, hash, { kind: 'store' })],
    ])('metadata not sent is sent by a re-run (%s), nothing paid again, then no longer kept', async (_, again) => {
      const hash = sha256(`custody owed ${_}`);
      fault('file:status=500*1');
      const { store, deps } = world();
      await register(deps, input(hash, { custody: true, file: FILE, walletName: 'w' }));
      expect(bed.sandbox.files.get(hash)).toBeUndefined();
      const outcome = await again(deps, hash);
      expect(outcome).toMatchObject({ kind: 'already-registered', custody: { metadataSent: true } });
      expect(called()).toEqual(['request', 'forfait', 'file', 'file']);
      expect(bed.sandbox.files.get(hash)).toMatchObject({ hash, name: FILE.name, walletName: 'w', userId: 1390 });
      expect(store.readCustodyOwed(hash)).toBeUndefined();
      // And then it is done: nothing more sent.
      expect(await register(deps, input(hash, { custody: true, file: FILE }))).toEqual({
        kind: 'already-registered',
        hash,
        entry: store.readRecord(hash),
      });
      expect(called()).toEqual(['request', 'forfait', 'file', 'file']);
    });

    it('a signal stops the wait for the metadata answer: the record is saved, the metadata owed, the run failed with why', async () => {
      const hash = sha256('custody interrupted');
      fault('file:hang*1');
      const { store, deps } = world();
      const outcome = await register(
        { ...deps, stopping: () => Promise.resolve() },
        input(hash, { custody: true, file: FILE }),
      );
      expect(outcome).toMatchObject({ kind: 'completed', custody: { metadataSent: false } });
      const failure = custodyFailure(outcome);
      expect(failure).toBeInstanceOf(TransientError);
      expect(failure?.message).toBe('interrupted before the service answered the file metadata');
      expect(store.readCustodyOwed(hash)).toBeDefined();
      // No custody, or nothing failed: no failure for the run.
      expect(custodyFailure(await register(deps, input(sha256('custody none'))))).toBeUndefined();
      expect(
        custodyFailure(await register(deps, input(sha256('custody pending'), { complete: false }))),
      ).toBeUndefined();
    });

    it('metadata kept with a record but damaged by hand: nothing sent, saying so', async () => {
      const hash = sha256('custody owed damaged');
      fault('file:status=500*1');
      const { store, deps } = world();
      await register(deps, input(hash, { custody: true, file: FILE }));
      const kept = store.readCustodyOwed(hash)!;
      await store.saveCustodyOwed({ ...kept, metadataJson: '{"hash":"nope"}' });
      const outcome = await register(deps, input(hash, { custody: true, file: FILE }));
      expect(outcome).toMatchObject({ kind: 'already-registered', custody: { metadataSent: false } });
      if (outcome.kind !== 'already-registered') return;
      expect(outcome.custody?.error).toMatchObject({ exitCode: 1 });
      expect(outcome.custody?.error?.message).toContain(
        `the metadata kept in ${store.custodyFile(hash)} is not of the documented shape`,
      );
      expect(called()).toEqual(['request', 'forfait', 'file']);
      // A file that is no JSON of the store's shape: the record stands, exit 2 (nothing sent) naming the file.
      writeFileSync(store.custodyFile(hash), 'garbage');
      const damaged = await register(deps, input(hash, { custody: true, file: FILE }));
      expect(damaged).toMatchObject({ kind: 'already-registered', entry: store.readRecord(hash) });
      expect(custodyFailure(damaged)).toMatchObject({ code: 'store', exitCode: 2 });
      expect(custodyFailure(damaged)?.hint).toContain(`move ${store.custodyFile(hash)} aside`);
      expect(called()).toEqual(['request', 'forfait', 'file']);
    });

    it('a custody registration answered 409: who registered it cannot be told, so no metadata is sent, and it is said', async () => {
      const hash = sha256('custody 409');
      fault('forfait:drop-after*1');
      const { store, deps } = world();
      await rejection(register(deps, input(hash, { custody: true, file: FILE, walletName: 'w' })));
      expect(store.readCustodyOwed(hash)).toBeDefined();
      const outcome = await complete(deps, hash, { kind: 'store' });
      expect(outcome).toMatchObject({ kind: 'already-registered', entry: undefined, custody: { metadataSent: false } });
      expect(custodyFailure(outcome)).toBeUndefined();
      expect(bed.sandbox.files.has(hash)).toBe(false);
      // Nothing left that nothing could clear.
      expect(store.readCustodyOwed(hash)).toBeUndefined();
      expect(called()).toEqual(['request', 'forfait', 'forfait']);
    });

    it('a custody registration whose request step is answered 409 (a cold store, another run paid): no metadata, and it is said', async () => {
      const hash = sha256('custody request 409');
      const paid = world();
      await register(paid.deps, input(hash));
      // A CI re-run: an empty store, the service already has the hash.
      const { deps } = world();
      const outcome = await register(deps, input(hash, { custody: true, file: FILE, walletName: 'w' }));
      expect(outcome).toMatchObject({ kind: 'already-registered', entry: undefined, custody: { metadataSent: false } });
      expect(custodyFailure(outcome)).toBeUndefined();
      expect(bed.sandbox.files.has(hash)).toBe(false);
      expect(called()).toEqual(['request', 'forfait', 'request']);
    });

    it('a damaged custody file beside a pending session: rebuilt from the session, saved over, sent', async () => {
      const hash = sha256('custody damaged pending');
      fault('forfait:status=503*1');
      const { store, deps } = world();
      await rejection(register(deps, input(hash, { custody: true, file: FILE, walletName: 'w' })));
      writeFileSync(store.custodyFile(hash), 'garbage');
      const outcome = await complete(deps, hash, { kind: 'store' });
      expect(outcome).toMatchObject({ kind: 'completed', custody: { metadataSent: true } });
      expect(bed.sandbox.files.get(hash)).toMatchObject({ hash, walletName: 'w' });
      expect(existsSync(store.custodyFile(hash))).toBe(false);
    });

    it('custody metadata that cannot be saved before forfait: forfait not sent, the session kept, exit 1 saying so', async () => {
      const hash = sha256('custody disk full');
      const store = new FullDiskStore(join(bed.root, `full-custody-${stores++}`), 'custody');
      const error = await rejectionOf(
        register(world({ store }).deps, input(hash, { custody: true, file: FILE })),
        NotarizeError,
      );
      expect(error).toMatchObject({ code: 'store_write', exitCode: 1 });
      expect(error.message).toContain(
        `the custody metadata of ${hash} could not be saved, so its completion was not sent`,
      );
      expect(error.hint).toBe(
        `the session is kept: \`notarize complete ${hash}\` finishes it once the store can be written`,
      );
      expect(called()).toEqual(['request']);
      expect(store.readPending(hash)).toBeDefined();
    });

    it('a metadata call the service refuses (4xx): not owed any more, said once; a re-run answers from the ledger', async () => {
      const hash = sha256('custody refused');
      fault('file:status=400*1');
      const { store, deps } = world();
      const outcome = await register(deps, input(hash, { custody: true, file: FILE }));
      expect(custodyFailure(outcome)).toBeInstanceOf(ServiceRefusedError);
      expect(custodyFailure(outcome)?.hint).toContain('its file metadata was refused, so it is not sent again');
      expect(store.readCustodyOwed(hash)).toBeUndefined();
      // Provably not processed (a 429): said plainly, and kept for a re-run.
      const again = sha256('custody throttled');
      fault('file:status=429*1');
      const throttled = await register(deps, input(again, { custody: true, file: FILE }));
      expect(custodyFailure(throttled)?.hint).toContain('its file metadata was not taken; `notarize complete');
      expect(store.readCustodyOwed(again)).toBeDefined();
      // A 408 (not received whole in time) is no refusal of the body either: kept.
      const late = sha256('custody timed out');
      fault('file:status=408*1');
      const timedOut = await register(deps, input(late, { custody: true, file: FILE }));
      expect(custodyFailure(timedOut)?.hint).toContain('its file metadata was not taken; `notarize complete');
      expect(store.readCustodyOwed(late)).toBeDefined();
      expect(await register(deps, input(hash, { custody: true, file: FILE }))).toEqual({
        kind: 'already-registered',
        hash,
        entry: store.readRecord(hash),
      });
      expect(called()).toEqual([
        'request',
        'forfait',
        'file',
        'request',
        'forfait',
        'file',
        'request',
        'forfait',
        'file',
      ]);
    });

    it("a re-run's --wallet-name replaces the owed one; --no-complete keeps the wallet name for complete", async () => {
      const hash = sha256('custody wallet');
      fault('file:status=503*1');
      const { store, deps } = world();
      await register(deps, input(hash, { custody: true, file: FILE, walletName: 'bad wallet' }));
      // This run's call fails too: the name it asked for is what the next one sends.
      fault('file:status=503*1');
      await register(deps, input(hash, { custody: true, file: FILE, walletName: 'good' }));
      const owed = store.readCustodyOwed(hash)!;
      expect(JSON.parse(owed.metadataJson)).toMatchObject({ walletName: 'good' });
      // The same name again, failing again: kept as it was.
      fault('file:status=503*1');
      await register(deps, input(hash, { custody: true, file: FILE, walletName: 'good' }));
      expect(store.readCustodyOwed(hash)).toEqual(owed);
      await complete(deps, hash, { kind: 'store' });
      expect(bed.sandbox.files.get(hash)).toMatchObject({ walletName: 'good' });

      // While the session is still pending (its forfait failing): the last name asked for is the one sent.
      const pendingHash = sha256('custody wallet pending');
      fault('forfait:status=503*2');
      await rejection(register(deps, input(pendingHash, { custody: true, file: FILE, walletName: 'OLD' })));
      await rejection(register(deps, input(pendingHash, { custody: true, file: FILE, walletName: 'NEW' })));
      fault('file:status=503*1');
      await complete(deps, pendingHash, { kind: 'store' });
      expect(JSON.parse(store.readCustodyOwed(pendingHash)!.metadataJson)).toMatchObject({ walletName: 'NEW' });
      await complete(deps, pendingHash, { kind: 'store' });
      expect(bed.sandbox.files.get(pendingHash)).toMatchObject({ walletName: 'NEW' });

      const later = sha256('custody wallet later');
      const { store: other } = await requestOnly(later, newStore(), { custody: true, file: FILE, walletName: 'kept' });
      await complete(world({ store: other }).deps, later, { kind: 'store' });
      expect(bed.sandbox.files.get(later)).toMatchObject({ walletName: 'kept' });
    });

    it('a metadata call answered 2xx with a page that is no JSON object: not sent (exit 5), the registration stands', async () => {
      const hash = sha256('custody page');
      fault('file:html*1');
      const { store, deps } = world();
      const outcome = await register(deps, input(hash, { custody: true, file: FILE }));
      expect(outcome).toMatchObject({ kind: 'completed', custody: { metadataSent: false } });
      if (outcome.kind !== 'completed') return;
      expect(outcome.custody?.error?.exitCode).toBe(5);
      expect(store.readRecord(hash)).toBeDefined();
    });

    // Fake: the sandbox completes only with sessions it issued, and all of those are valid.
    it('a pending session that is not a subscription session: completed, but no metadata sent', async () => {
      const hash = sha256('custody odd session');
      const store = newStore();
      await store.savePending({
        hash,
        description: '',
        custody: true,
        savedAt: NOW.toISOString(),
        file: FILE,
        sessionJson: '{"sessionId":5}',
      });
      const api = fakeApi({
        completeRegistration: () => Promise.resolve(parseAnswer(recordText(hash), notarizationRecordSchema, 'record')),
      });
      const outcome = await complete(world({ api, store }).deps, hash, { kind: 'store' });
      expect(outcome).toMatchObject({ kind: 'completed', custody: { metadataSent: false } });
      if (outcome.kind !== 'completed') return;
      expect(outcome.custody?.error?.message).toBe('custody metadata needs the local file and a valid session');
      expect(outcome.custody?.error?.exitCode).toBe(1);
    });

    // Fake: the real client turns every failure into a NotarizeError; this is what a bug in it would throw.
    it('an unexpected failure of the metadata call (a bug) passes unchanged, the record already in the ledger', async () => {
      const hash = sha256('custody bug');
      const { store } = await requestOnly(hash, newStore(), { custody: true, file: FILE });
      const bug = new TypeError('a bug');
      const real = sandboxApi();
      const api = fakeApi({
        completeRegistration: (h, session) => real.completeRegistration(h, session),
        putFileMetadata: () => Promise.reject(bug),
      });
      expect(await rejection(complete(world({ api, store }).deps, hash, { kind: 'store' }))).toBe(bug);
      expect(store.readRecord(hash)).toBeDefined();
    });
  });

  describe("the 'completing' step", () => {
    it('is told once, as the forfait goes out: not while it waits for its slot, and not again for a retry', async () => {
      const hash = sha256('completing once');
      const { store } = await requestOnly(hash);
      const real = sandboxApi();
      const seen: string[] = [];
      const { deps, steps } = world({
        store,
        api: fakeApi({
          completeRegistration: async (h, session, onSent) => {
            seen.push(`before: ${steps.join(',')}`);
            onSent?.(); // the first attempt goes out
            onSent?.(); // and, refused with a 429, its retry
            return real.completeRegistration(h, session);
          },
        }),
      });
      const outcome = await complete(deps, hash, { kind: 'store' });
      expect(outcome).toMatchObject({ kind: 'completed', entry: { hash } });
      expect(seen).toEqual(['before: ']);
      expect(steps).toEqual(['completing', 'saving']);
    });

    it("is not told for a forfait that never went out (held back by the run's outage)", async () => {
      const hash = sha256('completing never');
      const { store } = await requestOnly(hash);
      const held = new HeldBackError('not sent: the service failed two calls of this run in a row');
      const { deps, steps } = world({ store, api: fakeApi({ completeRegistration: () => Promise.reject(held) }) });
      expect(await rejection(complete(deps, hash, { kind: 'store' }))).toBe(held);
      expect(steps).toEqual([]);
      expect(store.readPending(hash)).toBeDefined();
    });
  });

  describe('a completion that fails', () => {
    it('a record that cannot be saved: exit 1, the record quoted, the session still pending', async () => {
      const hash = sha256('unsaved record');
      const { store: first, entry } = await requestOnly(hash);
      const store = plantLink(first, 'ledger');
      const error = await rejectionOf(complete(world({ store }).deps, hash, { kind: 'store' }), NotarizeError);
      expect(error).toMatchObject({ code: 'store_write', exitCode: 1 });
      expect(error.message).toMatch(
        new RegExp(`^the registration of ${hash} was completed, but its record could not be saved: `),
      );
      expect(error.hint).toMatch(
        new RegExp(
          `^the session stays pending in ${store.pendingFile(hash)}, though paid \\(completing it again gets a 409, and no record\\); ` +
            `keep the record quoted here: the service sends it only this once; the record the service sent: \\{"hash":"${hash}"`,
        ),
      );
      expect(store.readPending(hash)).toEqual(entry);
    });

    /** The one answer kept aside in `store`'s quarantine/: its file, and what the file holds. */
    const keptAside = (store: ServiceStore) => {
      const [name] = readdirSync(store.quarantineDir);
      const file = join(store.quarantineDir, name!);
      return { file, kept: JSON.parse(readFileSync(file, 'utf8')) as Record<string, string> };
    };

    it('an answer of the wrong shape is kept aside in quarantine, not in the ledger; the session is marked', async () => {
      const hash = sha256('quarantined');
      const { store, entry } = await requestOnly(hash);
      fault('forfait:wrong-shape*1');
      const error = await rejectionOf(complete(world({ store }).deps, hash, { kind: 'store' }), ProtocolError);
      const { file, kept: quarantined } = keptAside(store);
      expect(error.message).toMatch(
        new RegExp(
          `^the service answered the completion of ${hash} with something that is not its record ` +
            `\\(the answer to the completion \\(forfait\\) does not match the documented shape: .*creationDate.*\\); ` +
            `it was not put in the ledger: kept aside in ${file}$`,
        ),
      );
      expect(error.hint).toContain(`\`notarize complete ${hash}\` sends the session again`);
      expect(quarantined).toMatchObject({ hash, receivedAt: NOW.toISOString() });
      expect(JSON.parse(quarantined.answerText!)).toMatchObject({ hash, creationDate: expect.any(String) });
      expect(store.readRecord(hash)).toBeUndefined();
      expect(store.readPending(hash)).toEqual({ ...entry, forfaitUnreadAt: NOW.toISOString() });
    });

    it('an answer that cannot even be kept aside is still kept out of the ledger, and says so', async () => {
      const hash = sha256('not even quarantined');
      const { store: first } = await requestOnly(hash);
      const store = plantLink(first, 'quarantine');
      fault('forfait:wrong-shape*1');
      const error = await rejectionOf(complete(world({ store }).deps, hash, { kind: 'store' }), ProtocolError);
      expect(error.message).toMatch(/; it was not put in the ledger: it could not even be kept aside$/);
      expect(store.readRecord(hash)).toBeUndefined();
    });

    it('an answer that came whole but is not JSON (a number written NaN) is kept aside too, its own error and hint kept', async () => {
      const hash = sha256('NaN in the record');
      const { store, entry } = await requestOnly(hash);
      const text = recordText(hash).replace('"payload": null', '"payload": NaN');
      const api = fakeApi({
        // Thrown as the answer is read (a rejection, as from the real client), once it went out.
        completeRegistration: (_h, _s, onSent) =>
          Promise.resolve().then(() => {
            onSent?.();
            return parseAnswer(text, notarizationRecordSchema, 'answer to the completion (forfait)');
          }),
      });
      const error = await rejectionOf(
        complete(world({ api, store }).deps, hash, { kind: 'store' }),
        UnreadableAnswerError,
      );
      const { file, kept: quarantined } = keptAside(store);
      expect(error.message).toBe(
        `the answer to the completion (forfait) is not JSON (${Buffer.byteLength(text)} bytes); kept aside in ${file}`,
      );
      expect(error.hint).toContain(`\`notarize complete ${hash}\` sends the session again`);
      expect(quarantined).toEqual({ hash, receivedAt: NOW.toISOString(), reason: 'it is not JSON', answerText: text });
      expect(store.readRecord(hash)).toBeUndefined();
      expect(store.readPending(hash)).toEqual({ ...entry, forfaitUnreadAt: NOW.toISOString() });
    });

    it('an answer that broke off keeps nothing aside: nothing came whole', async () => {
      const hash = sha256('answer broke off');
      const { store, entry } = await requestOnly(hash);
      const broke = 'POST /forfait answered 200, but its body could not be read (it broke off)';
      const api = fakeApi({
        completeRegistration: (_h, _s, onSent) => sentThen(onSent, new UnreadableAnswerError(broke)),
      });
      const error = await rejectionOf(
        complete(world({ api, store }).deps, hash, { kind: 'store' }),
        UnreadableAnswerError,
      );
      expect(error.message).toBe(broke);
      expect(existsSync(store.quarantineDir)).toBe(false);
      expect(store.readPending(hash)).toEqual({ ...entry, forfaitUnreadAt: NOW.toISOString() });
    });

    it('an answer in a coding that cannot be undone is kept aside as its bytes came (base64)', async () => {
      const hash = sha256('record in an unknown coding');
      const { store, entry } = await requestOnly(hash);
      fault('forfait:undecodable*1');
      const error = await rejectionOf(complete(world({ store }).deps, hash, { kind: 'store' }), UnreadableAnswerError);
      const { file, kept: quarantined } = keptAside(store);
      expect(error.message).toMatch(
        new RegExp(`which notarize cannot decode; kept aside in ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`),
      );
      expect(quarantined).toMatchObject({ hash });
      expect(quarantined.reason).toMatch(/encoded as 'x-sandbox-unknown', which notarize cannot decode$/);
      expect(quarantined.answerText).toBeUndefined();
      expect(JSON.parse(Buffer.from(quarantined.answerBase64!, 'base64').toString('utf8'))).toMatchObject({ hash });
      expect(store.readRecord(hash)).toBeUndefined();
      expect(store.readPending(hash)).toEqual({ ...entry, forfaitUnreadAt: NOW.toISOString() });
    });

    it('sent again after such an answer, the 409 says where the answer not taken for its record is kept', async () => {
      const hash = sha256('record kept aside, then 409');
      const { store } = await requestOnly(hash);
      fault('forfait:undecodable*1');
      await rejectionOf(complete(world({ store }).deps, hash, { kind: 'store' }), UnreadableAnswerError);
      const { file } = keptAside(store);
      // What notarize did not keep there (a copy, an editor's backup, a link, a folder), named
      // after the hash and sorting after it, is not named as the latest answer.
      const later = '2999-01-01T00-00-00-000Z';
      for (const stray of [
        `${hash}.zz.json`,
        `${hash}.Z.json`,
        `${hash}.9.json`,
        `${hash}.json~`,
        `${hash}.${later}.txt`,
      ])
        writeFileSync(join(store.quarantineDir, stray), '{}\n');
      symlinkSync(file, join(store.quarantineDir, `${hash}.${later}.json`));
      mkdirSync(join(store.quarantineDir, `${hash}.${later.replace('2999', '2998')}.json`));
      // The first forfait went through: the service has the hash, and answers the second 409.
      const outcome = await complete(world({ store }).deps, hash, { kind: 'store' });
      expect(outcome).toMatchObject({
        kind: 'already-registered',
        hash,
        entry: undefined,
        service: { answerKeptAside: file, retiredSession: expect.any(String) },
      });
      // complete run again (nothing pending, the 409 remembered), and a request step told 409 later
      // (register run again) say so too.
      const remembered = await complete(world({ store }).deps, hash, { kind: 'store' });
      expect(remembered).toMatchObject({ kind: 'already-registered', service: { answerKeptAside: file } });
      const again = await register(world({ store }).deps, input(hash));
      expect(again).toMatchObject({ kind: 'already-registered', service: { answerKeptAside: file } });
    });

    // Fake: the sandbox answers forfait with the record of the hash asked: lowercase, "registered", flat.
    const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    const withStatus = (status: string) => (hash: string) =>
      recordText(hash).replace('"status": "registered"', `"status": ${JSON.stringify(status)}`);
    const withPayloadDepth = (levels: number) => (hash: string) =>
      recordText(hash).replace('"payload": null', `"payload": ${nested(levels)}`);
    it.each<[string, (hash: string) => string, string | undefined]>([
      [
        'a record of another hash',
        () => recordText(sha256('another')),
        `the answer is a record of hash ${sha256('another')}`,
      ],
      ['a record naming the hash in capitals', (hash) => recordText(hash.toUpperCase()), undefined],
      ...['not_registered', 'failed', 'Registered'].map((status): [string, (hash: string) => string, string] => [
        `a record of status ${status}`,
        withStatus(status),
        `the record's status is ${JSON.stringify(status)}, not "registered"`,
      ]),
      // The record object is one level, its payload the rest; a receipt adds one.
      ['a record as deep as a receipt can carry', withPayloadDepth(MAX_RECORD_DEPTH - 1), undefined],
      [
        'a record one level deeper',
        withPayloadDepth(MAX_RECORD_DEPTH),
        `the record nests more than ${MAX_RECORD_DEPTH} levels deep, which no receipt can carry`,
      ],
    ])(
      '%s: the record only if of this hash, registered, and one a receipt can carry',
      async (what, answer, refused) => {
        const hash = sha256(`answered: ${what}`);
        const { store } = await requestOnly(hash);
        const text = answer(hash);
        expect(text).not.toBe(recordText(hash));
        const api = fakeApi({
          completeRegistration: () => Promise.resolve(parseAnswer(text, notarizationRecordSchema, 'record')),
        });
        const done = complete(world({ api, store }).deps, hash, { kind: 'store' });
        if (refused === undefined) {
          expect(await done).toMatchObject({ kind: 'completed', entry: { recordJson: text } });
          return;
        }
        // Quarantined: never in the ledger, where verify would take it for proof; the session kept and marked.
        const error = await rejectionOf(done, ProtocolError);
        expect(error.message).toContain(`(${refused})`);
        expect(store.readRecord(hash)).toBeUndefined();
        expect(store.readPending(hash)?.forfaitUnreadAt).toBe(NOW.toISOString());
      },
    );

    type ErrorClass = abstract new (...args: never[]) => NotarizeError;
    const sessionKept = (hash: string) => `the session is kept: finish with \`notarize complete ${hash}\``;
    it.each<{ what: string; spec: string; kind: ErrorClass; hint: (hash: string, store: ServiceStore) => string }>([
      {
        what: 'a 503 with Retry-After, not processed by the assumption of the retries (its own hint first)',
        spec: 'forfait:status=503@1*4',
        kind: TransientError,
        hint: (hash: string) => `the service is unavailable or busy; try again later; ${sessionKept(hash)}`,
      },
      {
        what: 'a 5xx that does not say it turned the call away: it may have been completed',
        spec: 'forfait:status=500*1',
        kind: TransientError,
        hint: (hash: string) =>
          `the service may have completed it (see ${page(hash)}); the session is kept: ` +
          `\`notarize complete ${hash}\` sends it again (an "already registered" then means it had)`,
      },
      {
        what: 'no answer (the connection lost once sent): not "could not be reached", it may have been completed',
        spec: 'forfait:drop-after*4',
        kind: TransientError,
        hint: (hash: string) =>
          `no answer came, so the service may have completed it (see ${page(hash)}); the session is kept: ` +
          `\`notarize complete ${hash}\` sends it again (an "already registered" then means it had)`,
      },
      {
        what: 'a refusal',
        spec: 'forfait:status=400*1',
        kind: ServiceRefusedError,
        hint: (hash: string, store: ServiceStore) =>
          `the session is kept in ${store.pendingFile(hash)}; if the service will never accept it, ` +
          `\`notarize pending drop ${hash}\` puts it aside`,
      },
    ])('$what: the session is kept, the hint says what to do next', async ({ spec, kind, hint }) => {
      const hash = sha256(`failing forfait ${spec}`);
      const { store, entry } = await requestOnly(hash);
      fault(spec);
      const error = await rejectionOf(complete(world({ store }).deps, hash, { kind: 'store' }), kind);
      expect(error.hint).toBe(hint(hash, store));
      expect(store.readPending(hash)).toEqual(entry);
    });

    // Fake: the sandbox answers only 2xx or 4xx/5xx, never an unexpected status (a 3xx).
    it('an answer of an unexpected status: the service may have completed it, the hint says where to look', async () => {
      const hash = sha256('unexpected status');
      const { store } = await requestOnly(hash);
      const odd = new ProtocolError(
        `POST ${bed.url}/api/v2/registration/${hash}/forfait answered 302 (an unexpected status)`,
      );
      const api = fakeApi({ completeRegistration: (_h, _s, onSent) => sentThen(onSent, odd) });
      const error = await rejection(complete(world({ api, store }).deps, hash, { kind: 'store' }));
      expect(error).toBe(odd);
      expect(odd.hint).toBe(
        `the service may have completed it, but its answer could not be read (see ${page(hash)}); ` +
          `the session is kept: \`notarize complete ${hash}\` sends it again`,
      );
      expect(store.readPending(hash)?.forfaitUnreadAt).toBeUndefined();
    });

    it('a request refused locally (a usage error) passes unchanged, its own hint kept', async () => {
      const hash = sha256('refused locally');
      const { store } = await requestOnly(hash);
      // A user agent undici will not send: the request is refused before it leaves.
      const api = sandboxApi({ userAgent: 'bad\nagent', token: 't'.repeat(20) });
      const error = await rejectionOf(complete(world({ api, store }).deps, hash, { kind: 'store' }), UsageError);
      expect(error).toMatchObject({ code: 'invalid_request' });
      expect(error.hint).toBe(
        'check NOTARIZE_TOKEN, the stored token and the settings; if they are fine, report this as a bug',
      );
      expect(forfaitBodies()).toEqual([]);
    });

    // Fake: the real client turns every failure into a NotarizeError; this is what a bug in it would throw.
    it('an unexpected failure (a bug) passes unchanged, without a hint added', async () => {
      const hash = sha256('bug in forfait');
      const { store } = await requestOnly(hash);
      const bug = new TypeError('a bug');
      const api = fakeApi({ completeRegistration: (_h, _s, onSent) => sentThen(onSent, bug) });
      expect(await rejection(complete(world({ api, store }).deps, hash, { kind: 'store' }))).toBe(bug);
      expect(bug).not.toHaveProperty('hint');
      expect(store.readPending(hash)).toBeDefined();
    });
  });
});
