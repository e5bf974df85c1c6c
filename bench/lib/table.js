/**
 * The rows of the report and the text table. A row compares a notarize
 * figure with a reference figure measured in the same run; `ratio` is always
 * notarize ÷ reference, and `met` is true, false, or null for a figure that
 * has no target (shown for context).
 */

/** A row whose target is "ratio ≤ limit". */
export function ratioRow(benchmark, notarizeText, referenceText, ratio, limit, note) {
  return {
    benchmark,
    notarize: notarizeText,
    reference: referenceText,
    ratio,
    target: `≤ ${limit}`,
    met: ratio <= limit,
    note,
  };
}

/** A row with an absolute target on the notarize figure ("≤ limit unit"). */
export function absoluteRow(benchmark, notarizeText, referenceText, value, limit, targetText, note) {
  return {
    benchmark,
    notarize: notarizeText,
    reference: referenceText,
    ratio: undefined,
    target: targetText,
    met: value <= limit,
    note,
  };
}

/** A row shown for context, without a target. */
export function infoRow(benchmark, notarizeText, referenceText, ratio, note) {
  return { benchmark, notarize: notarizeText, reference: referenceText, ratio, target: '—', met: null, note };
}

const HEADERS = ['benchmark', 'notarize', 'reference', 'ratio', 'target', 'met?'];

function cells(row) {
  return [
    row.benchmark,
    row.notarize,
    row.reference,
    row.ratio === undefined ? '—' : row.ratio.toFixed(2),
    row.target,
    row.met === null ? 'info' : row.met ? 'yes' : 'NO',
  ];
}

/** A plain-text table with aligned columns. */
export function textTable(rows) {
  const body = rows.map(cells);
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (r) =>
    r
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(HEADERS), line(widths.map((w) => '-'.repeat(w))), ...body.map(line), ...notes(rows)].join('\n');
}

function notes(rows) {
  return rows.filter((r) => r.note).map((r) => `  note: ${r.benchmark}: ${r.note}`);
}

/** The same table in Markdown, for docs/performance.md and the README. */
export function markdownTable(rows) {
  const body = rows.map(cells);
  const line = (r) => `| ${r.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  const footer = notes(rows).map((n) => `\n${n.trim()}`);
  return [line(HEADERS), line(HEADERS.map(() => '---')), ...body.map(line), ...footer].join('\n');
}
