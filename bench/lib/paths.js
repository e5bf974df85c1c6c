/** Where things are, relative to this checkout. */
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The notarize under test; BENCH_BIN points elsewhere to compare two builds (A/B). */
export const BIN = process.env.BENCH_BIN || fileURLToPath(new URL('../../bin/notarize.js', import.meta.url));
export const BENCH = fileURLToPath(new URL('../', import.meta.url));
