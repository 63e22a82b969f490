// A file or stdin as text: UTF-8, with or without a byte-order mark, or UTF-16 with one (what
// Windows editors and PowerShell's redirection write), as kubectl reads manifests. Anything else
// is refused by name, where it would otherwise reach the YAML parser as one long string or with
// replacement characters in place of the bytes that were there.

import { InputError } from './io';

const FIX = 'save the file as UTF-8';

/** The text of `bytes`, read from `source` (a path, or `<stdin>`); an InputError if it is not text. */
export function textOf(bytes: Uint8Array, source: string): string {
  const encoding = markedEncoding(bytes);
  if (encoding === 'utf-32')
    throw new InputError(
      `${source}: UTF-32 text (its byte-order mark says so), which is not read here; ${FIX}`,
    );
  if (encoding !== 'utf-8') {
    const text = decodeUtf16(bytes, encoding, source);
    const nul = text.indexOf('\0');
    if (nul >= 0)
      throw new InputError(
        `${source}: not text: it holds a NUL character (at line ${lineAt(text, nul)}); ${FIX}`,
      );
    return text;
  }
  const nul = bytes.indexOf(0);
  if (nul >= 0)
    throw new InputError(
      `${source}: not text: it holds NUL bytes (the first at offset ${nul}), as UTF-16 without a byte-order mark does; ${FIX}`,
    );
  return decodeUtf8(bytes, source);
}

type Encoding = 'utf-8' | 'utf-16le' | 'utf-16be' | 'utf-32';

/** Byte-order marks, longest first: UTF-32LE's begins with UTF-16LE's. */
const MARKS: { bytes: number[]; encoding: Encoding }[] = [
  { bytes: [0xff, 0xfe, 0, 0], encoding: 'utf-32' },
  { bytes: [0, 0, 0xfe, 0xff], encoding: 'utf-32' },
  { bytes: [0xff, 0xfe], encoding: 'utf-16le' },
  { bytes: [0xfe, 0xff], encoding: 'utf-16be' },
];

function markedEncoding(b: Uint8Array): Encoding {
  const mark = MARKS.find((m) => m.bytes.every((x, i) => b[i] === x));
  return mark?.encoding ?? 'utf-8';
}

const lineAt = (text: string, at: number): number => text.slice(0, at).split('\n').length;

function decodeUtf8(bytes: Uint8Array, source: string): string {
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

function decodeUtf16(bytes: Uint8Array, encoding: Encoding, source: string): string {
  try {
    return new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch {
    throw new InputError(
      `${source}: not ${encoding.toUpperCase()} text, as its byte-order mark says (an odd byte at the end, or half of a surrogate pair); ${FIX}`,
    );
  }
}

/** Where the first malformed UTF-8 sequence starts: one pass, sequence by sequence. */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const n = sequenceAt(bytes, i);
    if (n === 0) return i;
    i += n;
  }
  return bytes.length;
}

/**
 * The length of the well-formed UTF-8 sequence at `i`, or 0: the lead byte gives the length and
 * the range of the second byte (no overlong forms, no surrogates, nothing past U+10FFFF).
 */
function sequenceAt(b: Uint8Array, i: number): number {
  const lead = b[i] ?? 0;
  if (lead < 0x80) return 1;
  const form = FORMS.find((f) => lead >= f.from && lead <= f.to);
  if (!form) return 0;
  const second = b[i + 1] ?? 0;
  if (second < form.min || second > form.max) return 0;
  for (let k = 2; k < form.length; k++) if (((b[i + k] ?? 0) & 0xc0) !== 0x80) return 0;
  return form.length;
}

/** The lead bytes of UTF-8's multi-byte forms (RFC 3629's table). */
const FORMS = [
  { from: 0xc2, to: 0xdf, length: 2, min: 0x80, max: 0xbf },
  { from: 0xe0, to: 0xe0, length: 3, min: 0xa0, max: 0xbf },
  { from: 0xe1, to: 0xec, length: 3, min: 0x80, max: 0xbf },
  { from: 0xed, to: 0xed, length: 3, min: 0x80, max: 0x9f },
  { from: 0xee, to: 0xef, length: 3, min: 0x80, max: 0xbf },
  { from: 0xf0, to: 0xf0, length: 4, min: 0x90, max: 0xbf },
  { from: 0xf1, to: 0xf3, length: 4, min: 0x80, max: 0xbf },
  { from: 0xf4, to: 0xf4, length: 4, min: 0x80, max: 0x8f },
];
