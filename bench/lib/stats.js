/** Small helpers for figures: best, median, formatting. */

export const best = (values) => Math.min(...values);

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export const max = (values) => Math.max(...values.filter((v) => v !== undefined));

/** Milliseconds as "812 ms" or "1.23 s". */
export function ms(value) {
  if (value === undefined || Number.isNaN(value)) return 'n/a';
  return value < 1000 ? `${value.toFixed(value < 10 ? 1 : 0)} ms` : `${(value / 1000).toFixed(2)} s`;
}

/** Kibibytes (what GNU time and VmHWM report as kB) as "52 MiB". */
export function mb(kB) {
  if (kB === undefined || Number.isNaN(kB)) return 'n/a';
  return `${(kB / 1024).toFixed(kB < 10 * 1024 ? 1 : 0)} MiB`;
}

/**
 * Runs `rounds` rounds; in each, every contender runs once, in an order
 * rotated from round to round so that none always runs first (after a cold
 * or a busy moment). Returns { name: [result, ...] }.
 */
export async function interleave(contenders, rounds, onRun = () => {}) {
  const results = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const contender = contenders[(round + k) % contenders.length];
      if (contender.rounds !== undefined && results[contender.name].length >= contender.rounds) continue;
      const result = await contender.run(round);
      results[contender.name].push(result);
      onRun(contender.name, result, round);
    }
  }
  return results;
}
