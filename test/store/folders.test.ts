/**
 * Store folders per service (src/store/store.ts `serviceDirName`): names
 * that cannot collide for different base URLs, with a readable part kept;
 * and a store of an older notarize, whose folder had the old name, moved to
 * the new name on first use with its pending sessions still completable.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { legacyServiceDirName, serviceDirName, Store } from '../../src/store/store.js';
import { type Bed, useBed } from '../helpers/bed.js';
import { describeRun } from '../helpers/cli.js';

let bed: Bed;
useBed((created) => (bed = created), { keyInEnv: true });

describe('service folder names', () => {
  it('differ for the URLs whose old names collided, and keep a readable part', () => {
    const a = serviceDirName('https://a.example:8443');
    const b = serviceDirName('https://a.example_8443');
    expect(legacyServiceDirName('https://a.example:8443')).toBe(legacyServiceDirName('https://a.example_8443'));
    expect(a).not.toBe(b);
    expect(a).toMatch(/^a\.example-8443-[0-9a-f]{16}$/);
    expect(b).toMatch(/^a\.example_8443-[0-9a-f]{16}$/);
    expect(serviceDirName('https://app.dedit.io')).toMatch(/^app\.dedit\.io-[0-9a-f]{16}$/);
    expect(serviceDirName('http://127.0.0.1:8080')).toMatch(/^http_127\.0\.0\.1-8080-[0-9a-f]{16}$/);
  });

  it('are distinct across scheme, port, path and case of the path; equal for the same normalised URL', () => {
    const urls = [
      'https://host.example',
      'http://host.example',
      'https://host.example:444',
      'https://host.example/a/b',
      'https://host.example/a_b',
      'https://host.example/A/b',
      'http://[::1]:9',
      'http://127.0.0.1:9',
    ];
    const names = urls.map(serviceDirName);
    expect(new Set(names).size).toBe(urls.length);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9._-]+$/);
    // The URL parser's normalisation: host case, a default port, a trailing slash.
    expect(serviceDirName('https://HOST.example:443/')).toBe(serviceDirName('https://host.example'));
  });

  it('stay short enough for any file system, however long the host', () => {
    const long = `https://${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.example`;
    expect(serviceDirName(long).length).toBeLessThanOrEqual(80 + 1 + 16);
  });
});

describe('a store of the old layout', () => {
  it('is moved to the new name once; its pending session is completed; nothing is left under the old name', async () => {
    const doc = await bed.file('old.txt', 'registered by an older notarize\n');
    const pending = await bed.main(['register', doc, '--no-complete']);
    expect(pending.code, describeRun(pending)).toBe(0);
    // Make it look like an older notarize's store: the same folder under the old name.
    const services = join(bed.storeDir, 'services');
    const legacy = join(services, legacyServiceDirName(bed.url));
    renameSync(bed.serviceDir(), legacy);
    expect(readdirSync(services)).toEqual([legacyServiceDirName(bed.url)]);

    const listed = await bed.main(['pending', '--json']);
    expect(listed.code, describeRun(listed)).toBe(0);
    expect(listed.stdout).toContain(bed.pendingHashes()[0]);
    expect(listed.stderr).toContain(`moved the store of ${bed.url}`);
    expect(readdirSync(services)).toEqual([serviceDirName(bed.url)]);

    const [hash] = bed.pendingHashes();
    const completed = await bed.main(['complete', hash!]);
    expect(completed.code, describeRun(completed)).toBe(0);
    expect(bed.ledgerHashes()).toEqual([hash]);
    expect(bed.pendingHashes()).toEqual([]);
    // Said once: the next run finds the new folder.
    const again = await bed.main(['pending']);
    expect(again.stderr).not.toContain('moved the store');
    expect(existsSync(legacy)).toBe(false);
  });

  it('is left alone when the new folder exists already (the new one is used; nothing is merged or lost)', () => {
    const store = new Store(join(bed.root, 'both'));
    const url = 'https://a.example:8443';
    const services = join(store.dir, 'services');
    const legacy = join(services, legacyServiceDirName(url));
    const current = join(services, serviceDirName(url));
    for (const dir of [join(legacy, 'pending'), join(current, 'pending')]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(legacy, 'pending', 'marker'), 'old');
    expect(store.service(url).dir).toBe(current);
    expect(existsSync(join(legacy, 'pending', 'marker'))).toBe(true);
  });

  it('of two URLs that shared an old name goes to the first used; the other starts afresh in its own', () => {
    const warnings: string[] = [];
    const store = new Store(join(bed.root, 'shared'), (message) => warnings.push(message));
    const services = join(store.dir, 'services');
    const legacy = join(services, legacyServiceDirName('https://a.example:8443'));
    mkdirSync(join(legacy, 'ledger'), { recursive: true });
    const first = store.service('https://a.example:8443');
    const second = store.service('https://a.example_8443');
    expect(existsSync(join(first.dir, 'ledger'))).toBe(true);
    expect(second.dir).not.toBe(first.dir);
    expect(existsSync(second.dir)).toBe(false);
    expect(warnings.filter((w) => w.startsWith('moved the store'))).toHaveLength(1);
  });
});
