/**
 * Plain-text wording of command output that needs no measuring or colour
 * (render.ts has the tables): a sha256sum line, how a message names some
 * documents, a size in binary units. Cheap to load, for every command.
 */

/** A `sha256sum` line: names with a backslash or newline get GNU's escaping and a leading backslash. */
export function checksumLine(hash: string, name: string): string {
  if (!/[\\\n\r]/.test(name)) return `${hash}  ${name}`;
  const escaped = name.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
  return `\\${hash}  ${escaped}`;
}

/** How a warning names the documents it is about: the one digest, or how many and the first. */
export function someDocuments(count: number, first: string): string {
  return count === 1 ? first : `${count} documents (among them ${first})`;
}

/** Bytes in binary units, for progress lines: "512.0 MiB". */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}
