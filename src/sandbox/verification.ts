/**
 * The sandbox's public verification page of a hash, the stand-in for the
 * service's (api/pages.ts: HTML for people, not an API).
 */
import type { NotarizationRecord } from '../api/schemas.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for use inside HTML elements and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

function page(title: string, body: string): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    `<head><meta charset="utf-8"><title>${title} - notarize sandbox</title></head>`,
    `<body><h1>${title}</h1>${body}<p>This page comes from a local notarize sandbox, not from the real service.</p></body>`,
    '</html>',
    '',
  ].join('\n');
}

/** The verification page for `hash`: registered when `record` is given, not registered otherwise. */
export function verificationPage(hash: string, record: NotarizationRecord | undefined): string {
  const code = `<code>${escapeHtml(hash)}</code>`;
  if (!record) return page('Not registered', `<p>The hash ${code} is not registered in this sandbox.</p>`);
  const when = new Date(record.creationDate).toISOString();
  return page(
    'Registered',
    `<p>The hash ${code} is registered in this sandbox (${escapeHtml(record.blockchainType)}, status ` +
      `${escapeHtml(record.status)}) since <time datetime="${when}">${when}</time>.</p>` +
      `<p>Description: ${escapeHtml(record.description)}</p>`,
  );
}

/** The page the `html` fault answers with: what a proxy or captive portal might send instead of JSON. */
export const HTML_FAULT_PAGE = page(
  'Service temporarily unavailable',
  '<p>The upstream server did not answer. Please try again later.</p>',
);
