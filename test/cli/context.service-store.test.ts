/**
 * The context opens the store of a service once per run: `ctx.serviceStore` is one
 * ServiceStore per base URL, its directories checked (and tightened) on the
 * first read only, not on each of a command's reads.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Context } from '../../src/context.js';
import * as storeModule from '../../src/store/store.js';
import { serviceDirName } from '../../src/store/store.js';
import { bufferIO } from '../helpers/io.js';
import { useTempDirs } from '../helpers/temp-dirs.js';

const tempDir = useTempDirs('notarize-context-');
const BASE_URL = 'https://notary.example';

describe('Context.serviceStore', () => {
  it('is built once per run: the same service store on every read, its directories checked once', () => {
    const dir = tempDir();
    const service = join(dir, 'services', serviceDirName(BASE_URL));
    mkdirSync(join(service, 'pending'), { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o700);
    const output = bufferIO();
    const ctx = new Context(output.io, { NOTARIZE_CONFIG_DIR: dir, NOTARIZE_BASE_URL: BASE_URL }, {}, storeModule);

    const first = ctx.serviceStore;
    expect(first.dir).toBe(service);
    expect(statSync(service).mode & 0o777).toBe(0o700);
    const warnings = output.stderr();
    expect(warnings).toContain(`tightened the rights of ${join(service, 'pending')}`);

    // Widened again behind the run's back: the run does not look again.
    chmodSync(join(service, 'pending'), 0o755);
    expect(ctx.serviceStore).toBe(first);
    expect(ctx.serviceStore).toBe(first);
    expect(output.stderr()).toBe(warnings);
  });
});
