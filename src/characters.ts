/** Where a character is in a text, for an error that must not quote the text (a key) or would be long (a description). */

/** Where `match` was found in `text`, for an error: "U+001B at character 4" (characters counted, not UTF-16 units). */
export function characterWhere(text: string, match: RegExpExecArray): string {
  const codePoint = `U+${match[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  return `${codePoint} at character ${[...text.slice(0, match.index)].length + 1}`;
}
