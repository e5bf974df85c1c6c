/**
 * Reading a stream to its end, up to a size bound: the
 * service's answers (api/http.ts) and small user inputs such as a session or
 * an API key (core/read-input.ts). Past the bound it stops reading, so
 * a huge or endless source is never held in memory.
 */

/**
 * The bytes of `input`, or undefined as soon as it exceeds `limit` bytes; the
 * caller decodes them as what they hold demands (strictly for a description,
 * with a warning for a service's answer: api/http.ts).
 */
export async function readBoundedBytes(
  input: AsyncIterable<Buffer | string>,
  limit: number,
): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += bytes.length;
    if (size > limit) return undefined;
    chunks.push(bytes);
  }
  return Buffer.concat(chunks);
}
