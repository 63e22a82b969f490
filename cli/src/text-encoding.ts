// A file or stdin as text: UTF-8, with or without a byte-order mark, or UTF-16 with one (what
// Windows editors and PowerShell's redirection write), as kubectl reads manifests. Anything else
// is refused by name, where it would otherwise reach the YAML parser as one long string or with
// replacement characters in place of the bytes that were there.

import { InputError } from './io';

const FIX = 'save the file as UTF-8';

/** The text of `bytes`, read from `source` (a path, or `<stdin>`); an InputError if it is not text. */
export function textOf(bytes: Uint8Array, source: string): string {
  const encoding = markedEncoding(bytes);
  if (encoding !== 'utf-8') return decodeUtf16(bytes, encoding, source);
  const nul = bytes.indexOf(0);
  if (nul >= 0)
    throw new InputError(
      `${source}: not text: it holds NUL bytes (the first at offset ${nul}), as UTF-16 without a byte-order mark does; ${FIX}`,
    );
  try {
    // The decoder drops a leading byte-order mark itself.
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    const at = firstInvalidUtf8(bytes);
    const line = bytes.subarray(0, at).filter((b) => b === 0x0a).length + 1;
    throw new InputError(
      `${source}: not UTF-8 text (an invalid byte at line ${line}, offset ${at}); ${FIX}`,
    );
  }
}

type Encoding = 'utf-8' | 'utf-16le' | 'utf-16be';

function markedEncoding(bytes: Uint8Array): Encoding {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return 'utf-8';
}

function decodeUtf16(bytes: Uint8Array, encoding: Encoding, source: string): string {
  try {
    return new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch {
    throw new InputError(
      `${source}: not ${encoding.toUpperCase()} text, as its byte-order mark says (an odd byte at the end, or half of a surrogate pair); ${FIX}`,
    );
  }
}

/**
 * Where the first malformed UTF-8 sequence starts. The longest prefix a streaming decoder takes
 * without complaint ends at the byte that breaks the sequence (or at the end, for a sequence cut
 * short); the sequence starts at its lead byte, at most three bytes back.
 */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let good = 0;
  let bad = bytes.length + 1;
  while (bad - good > 1) {
    const mid = (good + bad) >>> 1;
    if (decodesSoFar(bytes.subarray(0, mid))) good = mid;
    else bad = mid;
  }
  let start = Math.min(good, bytes.length);
  while (start > 0 && good - start < 3 && ((bytes[start - 1] ?? 0) & 0xc0) === 0x80) start--;
  if (start > 0 && (bytes[start - 1] ?? 0) >= 0xc0) start--;
  return start;
}

function decodesSoFar(prefix: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(prefix, { stream: true });
    return true;
  } catch {
    return false;
  }
}
