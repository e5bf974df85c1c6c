import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IO, withinWidth, type IOOptions, type Spinner } from '../../src/output/io.js';

/** An IO over string buffers, as commands' tests use it. */
function bufferIO(options: Partial<IOOptions> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io = new IO({
    stdout: { write: (text: string) => out.push(text) },
    stderr: { write: (text: string) => err.push(text) },
    stdin: Readable.from([]),
    stdinIsTTY: false,
    stderrIsTTY: false,
    colour: false,
    ...options,
  });
  return { io, stdout: () => out.join(''), stderr: () => err.join(''), chunks: out };
}

describe('IO streams', () => {
  it('writes data on stdout and messages on stderr, one line each', () => {
    const { io, stdout, stderr } = bufferIO();
    io.data('{"hash":"abc"}');
    io.data('already ended\n');
    io.info('registered');
    io.warn('store tightened');
    io.error('error: refused');
    expect(stdout()).toBe('{"hash":"abc"}\nalready ended\n');
    expect(stderr()).toBe('registered\nwarning: store tightened\nerror: refused\n');
  });

  it('in GitHub Actions a warning is a ::warning command (shown on the run page), escaped, secrets scrubbed', () => {
    const { io, stderr } = bufferIO({ warningAnnotations: true });
    io.addSecret('sk_live_0123456789');
    io.warn('no receipt for 100% of\nthem \u001b[31m sk_live_0123456789');
    expect(stderr()).toBe('::warning title=notarize::no receipt for 100%25 of\\nthem \\u001b[31m [redacted]\n');
  });

  it('quiet silences info but not warnings, errors or data', () => {
    const { io, stdout, stderr } = bufferIO({ quiet: true });
    io.info('chatter');
    io.warn('something went wrong');
    io.error('failed');
    io.data('result');
    expect(stderr()).toBe('warning: something went wrong\nfailed\n');
    expect(stdout()).toBe('result\n');
  });

  it('debug lines appear only with verbose', () => {
    const quiet = bufferIO();
    quiet.io.debug('GET /x -> 200');
    expect(quiet.stderr()).toBe('');
    const verbose = bufferIO({ verbose: true });
    verbose.io.debug('GET /x -> 200');
    expect(verbose.stderr()).toBe('[notarize] GET /x -> 200\n');
  });
});

describe('IO.dataJsonArray', () => {
  it('writes exactly what JSON.stringify(items, null, 2) gives, for any array of JSON values', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 6 }), (items) => {
        const streamed = bufferIO();
        streamed.io.dataJsonArray(items);
        expect(streamed.stdout()).toBe(`${JSON.stringify(items, null, 2)}\n`);
      }),
      { numRuns: 300 },
    );
  });

  it('writes one element at a time and scrubs secrets in each', () => {
    const { io, chunks } = bufferIO();
    io.addSecret('ak_live_0123456789abcdef');
    io.dataJsonArray([{ file: 'a', note: 'ak_live_0123456789abcdef' }, { file: 'b\nc' }]);
    expect(chunks).toEqual([
      '[\n  {\n    "file": "a",\n    "note": "[redacted]"\n  },\n',
      '  {\n    "file": "b\\nc"\n  }\n]\n',
    ]);
  });
});

describe('IO.dataLines', () => {
  it('writes the lines as data would write them joined, in pieces that end with a line, secrets scrubbed in each', () => {
    const { io, chunks } = bufferIO();
    io.addSecret('ak_live_0123456789abcdef');
    // 20,000 lines of about 40 characters: 800 KB, more than one piece.
    const lines = Array.from(
      { length: 20_000 },
      (_, i) => `row ${i}  ${i % 997 === 0 ? 'ak_live_0123456789abcdef' : 'plain text here'}`,
    );
    io.dataLines(lines);
    expect(chunks.length).toBeGreaterThan(5);
    expect(chunks.every((chunk) => chunk.endsWith('\n') && chunk.length < 70 * 1024)).toBe(true);
    expect(chunks.join('')).toBe(`${lines.join('\n').replaceAll('ak_live_0123456789abcdef', '[redacted]')}\n`);
  });
});

describe('IO.redact: any JWT, known or not', () => {
  const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJ1c2VySWQiOjF9.c2lnbmF0dXJlc2lnbmF0dXJl';

  it('a JWT standing alone, or in a JSON string after an escape, is redacted and the JSON stays valid', () => {
    const { io } = bufferIO();
    expect(io.redact(`token ${JWT}.`)).toBe('token [redacted].');
    const json = JSON.stringify({ note: `a\n${JWT}`, other: `\u001e${JWT}` });
    const out = io.redact(json);
    expect(JSON.parse(out)).toEqual({ note: 'a\n[redacted]', other: '\u001e[redacted]' });
  });

  it('nothing that only looks like part of one: an escape before `yJ`, a longer base64url run', () => {
    const { io } = bufferIO();
    // A name starting with U+001E then `yJ...`, as JSON writes it: no `eyJ` in what it reads as.
    const escaped = JSON.stringify({ file: `\u001eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.abcdefghijklmnopqrstuv` });
    expect(io.redact(escaped)).toBe(escaped);
    const longer = `x${JWT}`;
    expect(io.redact(longer)).toBe(longer);
  });
});

describe('IO.addSecret', () => {
  const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJ1c2VySWQiOjF9.c2lnbmF0dXJl';
  const API_KEY = 'ak_live_0123456789abcdef';

  it('scrubs registered secrets from every stream, every occurrence', () => {
    const { io, stdout, stderr } = bufferIO({ verbose: true });
    io.addSecret(TOKEN);
    io.addSecret(API_KEY);
    io.data(`token=${TOKEN} again ${TOKEN}`);
    io.info(`key ${API_KEY}`);
    io.warn(`bearer ${TOKEN}`);
    io.error(`failed with ${API_KEY}`);
    io.debug(`Authorization: Bearer ${TOKEN}`);
    const all = stdout() + stderr();
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain(API_KEY);
    expect(stdout()).toBe('token=[redacted] again [redacted]\n');
    // The data's secret taken out is said once, on stderr (r101: `hash` of a file named with the key).
    expect(stderr()).toBe(
      'warning: a secret of yours (the API key or a token) was in what notarize printed, in a file name or a text: it is printed as [redacted], so that line does not name its file exactly (rename the file)\n' +
        'key [redacted]\nwarning: bearer [redacted]\nfailed with [redacted]\n[notarize] Authorization: Bearer [redacted]\n',
    );
    io.data(`once more ${TOKEN}`);
    expect(stderr().match(/a secret of yours/g)).toHaveLength(1);
  });

  it('scrubs a key as a URL spells it (%2F, %2f), and warns once of a named secret too short to be told from text', () => {
    const { io, stderr } = bufferIO();
    const key = 'sk_live_Zq9xW2/Lm+Vb7Rt4Ka==';
    io.addSecret(key);
    const upper = encodeURIComponent(key);
    const lower = upper.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase());
    expect(io.redact(`a?k=${upper}&b=${lower}`)).toBe('a?k=[redacted]&b=[redacted]');
    // Named (a variable, the key given, a proxy's password): said once each, with its name, never its value.
    io.addSecret('k123', 'NOTARIZE_API_KEY');
    io.addSecret('k123', 'NOTARIZE_API_KEY');
    io.addSecret('squid', 'the password in HTTPS_PROXY');
    io.addSecret('squid', 'the password in HTTPS_PROXY');
    io.addSecret('tok1234', 'NOTARIZE_TOKEN');
    // The same token, used (context.ts onToken): said once, by the name the user gave it (r115: "the token
    // the service sent", of NOTARIZE_TOKEN).
    io.addSecret('tok1234', 'the token in use');
    io.addSecret('', 'NOTARIZE_TOKEN');
    io.addSecret('  ', 'NOTARIZE_API_KEY');
    const said = stderr()
      .split('\n')
      .filter((line) => line.includes('shorter than 8 characters'));
    expect(said.map((line) => line.replace(/^warning: /, '').split(' is shorter')[0])).toEqual([
      'NOTARIZE_API_KEY',
      'the password in HTTPS_PROXY',
      'NOTARIZE_TOKEN',
    ]);
    expect(stderr()).not.toMatch(/k123|tok1234|squid/);
  });

  it('scrubs a key known by its trace alone wherever it stands, and says text holds it', async () => {
    const { keyTrace } = await import('../../src/secrets.js');
    const { io } = bufferIO();
    const key = 'sk_live_Zq9xW2/Lm+Vb7Rt4Ka==';
    io.addKeyTrace(keyTrace(key));
    expect(io.holdsSecret('nothing here, sk_live_other/key==')).toBe(false);
    const url = encodeURIComponent(key);
    for (const around of [
      (k: string) => `note ${k}.`,
      (k: string) => `ref-${k}`,
      (k: string) => `${k}x`,
      (k: string) => `notes_${k}.txt`,
      (k: string) => `a?b/c/d/e/f/g/h/i/j?apiKey=${k}&z=1`,
      (k: string) => `https://h.example/v1/keys/by/user/1390/${k}/x`,
      (k: string) => `{"k":"${k}"}`,
    ]) {
      for (const spelt of [key, url, url.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())]) {
        const text = around(spelt);
        expect(io.holdsSecret(text), text).toBe(true);
        expect(io.redact(text), text).toBe(around('[redacted]'));
      }
    }
    // A key with characters that split words elsewhere (, ;), found whole.
    const odd = 'Zq9xW2Lm,7Rt4KaPQ;x8';
    io.addKeyTrace(keyTrace(odd));
    expect(io.redact(`note ${odd} end`)).toBe('note [redacted] end');
  });

  it('finds a key however a URL spells it (URLSearchParams, every escape, mixed case), by trace or known', async () => {
    const { keyTrace } = await import('../../src/secrets.js');
    const key = 'Kx7!pQ2~mZ9(rT4)vB8*';
    const everyEscape = [...key].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
    const spellings = [
      new URLSearchParams({ apiKey: key }).toString().slice('apiKey='.length),
      encodeURIComponent(key).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
      everyEscape,
      everyEscape.replace(/%(..)/g, (_, hex: string, at: number) => `%${at % 2 ? hex.toUpperCase() : hex}`),
    ];
    const traced = bufferIO().io;
    traced.addKeyTrace(keyTrace(key));
    const known = bufferIO().io;
    known.addSecret(key);
    for (const io of [traced, known]) {
      for (const spelt of spellings) {
        expect(io.redact(`q?apiKey=${spelt}&x=1`), spelt).toBe('q?apiKey=[redacted]&x=1');
        expect(io.holdsSecret(`a ${spelt} b`), spelt).toBe(true);
      }
    }
  });

  it('finds a key holding a literal %XX as it is, and a plain key (known or traced) spelt all %XX', async () => {
    const { keyTrace } = await import('../../src/secrets.js');
    for (const key of ['abc%41def-secretkey-99', 'plainAlnumKey12345678']) {
      const spelt = [...key].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
      const partly = `${key.slice(0, 5)}%${key.charCodeAt(5).toString(16).toUpperCase()}${key.slice(6)}`;
      const traced = bufferIO().io;
      traced.addKeyTrace(keyTrace(key));
      const known = bufferIO().io;
      known.addSecret(key);
      for (const io of [traced, known]) {
        for (const text of [`bad key ${key} here`, `bad key ${spelt} here`, `bad key ${partly} here`]) {
          expect(io.redact(text), text).toBe('bad key [redacted] here');
        }
      }
    }
  });

  it('a trace whose prints cannot be used (damaged): the key is still looked for, between separators', async () => {
    const { keyDigest } = await import('../../src/secrets.js');
    const key = 'Kx7pQ2mZ9rT4vB8xw';
    for (const prints of [
      ['garbage'],
      ['3:1:00000000'],
      ['17:1'],
      ['17:123456:deadbeef'],
      ['20:99999999999:00000000'],
    ]) {
      const { io } = bufferIO();
      io.addKeyTrace({ digest: keyDigest(key), prints });
      expect(io.holdsSecret(`ref ${key} here`), prints.join()).toBe(true);
    }
    // Keys of any characters, between the separators around them.
    for (const odd of ["k(1)'2,3;4-abcdefgh", 'k!~()*é-Key-1234']) {
      const { io } = bufferIO();
      io.addKeyTrace({ digest: keyDigest(odd), prints: [] });
      expect(io.redact(`note ${odd} end; q?k=${odd}&x`), odd).toBe('note [redacted] end; q?k=[redacted]&x');
    }
  });

  it('a key traced by a store from before prints were kept: found whole or between separators', async () => {
    const { keyDigest } = await import('../../src/secrets.js');
    const { io } = bufferIO();
    const key = 'sk_live_Zq9xW2/Lm+Vb7Rt4Ka==';
    io.addKeyTrace({ digest: keyDigest(key), prints: [] });
    expect(io.redact(`key ${key}; q?apiKey=${encodeURIComponent(key)}&x=1 /keys/${key}/`)).toBe(
      'key [redacted]; q?apiKey=[redacted]&x=1 /keys/[redacted]/',
    );
  });

  it("scrubs a token's signature and payload echoed apart from it (a service quoting them reordered)", () => {
    const { io, stderr } = bufferIO();
    const token = 'eyJhbGciOiJIUzI1NiJ9.eyJ1c2VySWQiOjEzOTAsImV4cCI6MTd9.1FEf6qdwXkZ4gq7sR0Xy1bKqhE';
    const [header, payload, signature] = token.split('.');
    io.addSecret(token);
    io.warn(`the service said: Bearer ${signature}.${payload}.${header}`);
    expect(stderr()).toBe(`warning: the service said: Bearer [redacted].[redacted].${header}\n`);
  });

  it('finds a secret a JSON string spells with escapes, and leaves every other byte as it was', () => {
    const { io } = bufferIO();
    const key = 'live/Qx7Zp3Kd9Lm2Rt8Vw4Yb';
    io.addSecret(key);
    // `\/` (PHP's default) and `\u0051` for "Q": the same text, which no search of the bytes finds.
    expect(io.redact('{"d":"echo live\\/\\u0051x7Zp3Kd9Lm2Rt8Vw4Yb","n":1.50e3,"e":"a\\/b"}')).toBe(
      '{"d":"echo [redacted]","n":1.50e3,"e":"a\\/b"}',
    );
    // Without a secret, escapes and all stay byte for byte; quotes in plain text are no JSON to rewrite.
    const plain = 'said "a\\/b" and "x\\q" then "unterminated \\" \\u0051';
    expect(io.redact(plain)).toBe(plain);
  });

  it('ignores undefined and secrets too short to scrub safely', () => {
    const { io, stdout } = bufferIO();
    io.addSecret(undefined);
    io.addSecret('abc');
    io.data('abc def');
    expect(stdout()).toBe('abc def\n');
  });

  it('leaves no part of a secret that contains another registered secret', () => {
    // Secrets are replaced one after the other in the order they were added:
    // replacing the shorter first must not leave the tail of the longer one.
    const { io, stdout } = bufferIO();
    const short = 'secret-1234';
    const long = `${short}-and-more-5678`;
    io.addSecret(short);
    io.addSecret(long);
    io.data(`value: ${long}`);
    expect(stdout()).not.toContain('-and-more-5678');
    expect(stdout()).toBe('value: [redacted]\n');
  });
});

describe('withinWidth: a line drawn for the while, with room for a ^C', () => {
  it('leaves a line with room to spare as it is, and any line when the width is unknown', () => {
    expect(withinWidth('registered 3/3', 40)).toBe('registered 3/3');
    expect(withinWidth('x'.repeat(500), undefined)).toBe('x'.repeat(500));
    expect(withinWidth('x'.repeat(37), 40)).toBe('x'.repeat(37));
  });

  it('cuts any other to three columns less than the width (after `before` of its own), ending in …', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme-ascii', maxLength: 300 }),
        fc.integer({ min: 1, max: 200 }),
        fc.nat(4),
        (text, columns, before) => {
          const line = withinWidth(text, columns, before);
          expect(line.length).toBeLessThanOrEqual(Math.max(0, columns - before - 3));
          if (line !== text) expect(text.startsWith(line.replace(/…$/, ''))).toBe(true);
        },
      ),
    );
    expect(withinWidth('registering the Merkle root of 3 documents', 40)).toBe('registering the Merkle root of 3 doc…');
    expect(withinWidth('hashing 572.0 MiB of 4.0 GiB', 31, 2)).toBe('hashing 572.0 MiB of 4.0 …');
  });
});

describe('IO.spinner', () => {
  function spinnerIO(options: Partial<IOOptions>) {
    const started: string[] = [];
    const spinner: Spinner = { update() {}, stop() {} };
    const { io } = bufferIO({
      stderrIsTTY: true,
      startSpinner: (text) => {
        started.push(text);
        return spinner;
      },
      ...options,
    });
    return { io, started };
  }

  it('starts a spinner on a terminal', () => {
    const { io, started } = spinnerIO({});
    io.spinner('hashing').stop();
    expect(started).toEqual(['hashing']);
  });

  it.each([
    ['quiet', { quiet: true }],
    ['verbose', { verbose: true }],
    ['stderr not a terminal', { stderrIsTTY: false }],
  ])('starts none when %s', (_label, options: Partial<IOOptions>) => {
    const { io, started } = spinnerIO(options);
    const spinner = io.spinner('hashing');
    spinner.update('still hashing');
    spinner.stop();
    expect(started).toEqual([]);
  });
});
