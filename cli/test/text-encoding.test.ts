import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { textOf } from '../src/text-encoding';

const BIN = join(__dirname, '..', 'bin', 'outrigger.js');

const POD =
  'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  annotations:\n    note: "café ✓"\nspec:\n  containers:\n    - name: app\n      image: nginx\n';

function utf16be(text: string): Buffer {
  return Buffer.from(text, 'utf16le').swap16();
}

const ENCODED: [string, Buffer][] = [
  ['UTF-8', Buffer.from(POD, 'utf8')],
  [
    'UTF-8 with a byte-order mark',
    Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(POD)]),
  ],
  [
    'UTF-16LE with a byte-order mark',
    Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(POD, 'utf16le')]),
  ],
  ['UTF-16BE with a byte-order mark', Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be(POD)])],
];

describe('textOf: a manifest or configuration file as text', () => {
  it.each(ENCODED)('reads %s as the same text, without its mark', (_what, bytes) => {
    expect(textOf(bytes, 'pod.yaml')).toBe(POD);
  });

  it('refuses bytes that are not UTF-8, naming the file, the offset and the fix', () => {
    const bytes = Buffer.concat([Buffer.from('kind: Pod\nname: '), Buffer.from([0xc3, 0x28])]);
    expect(() => textOf(bytes, 'latin.yaml')).toThrow(
      /latin\.yaml: not UTF-8 text \(an invalid byte at line 2, offset 16\); save the file as UTF-8/,
    );
  });

  it('names the malformed sequence itself, after a character of several bytes', () => {
    const cases: [number[], number][] = [
      [[0xc3, 0xa9, 0x80], 5],
      [[0xf0, 0x9f, 0x98, 0x80, 0xff], 7],
      [[0xe2, 0x82], 3],
      [[0xed, 0xa0, 0x80], 3],
      [[0xc0, 0xaf], 3],
    ];
    for (const [tail, at] of cases)
      expect(() =>
        textOf(Buffer.concat([Buffer.from('a: '), Buffer.from(tail)]), 'x.yaml'),
      ).toThrow(
        `x.yaml: not UTF-8 text (an invalid byte at line 1, offset ${at}); save the file as UTF-8`,
      );
  });

  it('refuses UTF-32, whose mark begins as UTF-16LE does, and a NUL character in UTF-16', () => {
    const utf32le = Buffer.alloc(4 * (POD.length + 1));
    [0xfeff, ...[...POD].map((c) => c.codePointAt(0) ?? 0)].forEach((c, i) =>
      utf32le.writeUInt32LE(c, 4 * i),
    );
    expect(() => textOf(utf32le, 'pod32.yaml')).toThrow(
      /pod32\.yaml: UTF-32 text .*save the file as UTF-8/,
    );
    expect(() => textOf(utf32le.swap32(), 'pod32be.yaml')).toThrow(/pod32be\.yaml: UTF-32 text/);
    const nul = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from('kind: Pod\nname: a\0b\n', 'utf16le'),
    ]);
    expect(() => textOf(nul, 'nul.yaml')).toThrow(
      'nul.yaml: not text: it holds a NUL character (at line 2); save the file as UTF-8',
    );
  });

  it('refuses UTF-16 without a byte-order mark instead of reading it as one long string', () => {
    expect(() => textOf(Buffer.from(POD, 'utf16le'), 'pod16.yaml')).toThrow(
      /pod16\.yaml: .*NUL bytes.*UTF-16 without a byte-order mark.*save the file as UTF-8/,
    );
  });

  it('refuses a UTF-16 file cut in the middle of a character', () => {
    const bytes = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from('kind: Pod', 'utf16le'),
      Buffer.from([0x41]),
    ]);
    expect(() => textOf(bytes, 'cut.yaml')).toThrow(/cut\.yaml: not UTF-16LE text/);
  });
});

describe('outrigger inject on files in other encodings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-text-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function inject(
    bytes: Buffer,
    stdin = false,
  ): Promise<{ code: number; out: string; err: string }> {
    const file = join(dir, 'pod.yaml');
    writeFileSync(file, bytes);
    return new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [BIN, 'inject', '-f', stdin ? '-' : file],
        (error, out, err) => resolve({ code: error ? Number(error.code) : 0, out, err }),
      );
      child.stdin?.end(stdin ? bytes : undefined);
    });
  }

  it.each(ENCODED)('injects a pod written in %s', async (_what, bytes) => {
    const { code, out, err } = await inject(bytes);
    expect(err).toMatch(/Pod\/web: injected/);
    expect(code).toBe(0);
    expect(out).toContain('name: outrigger-proxy');
    expect(out).toContain('café ✓');
  });

  it('reads UTF-16 on stdin as from a file', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(POD, 'utf16le')]);
    const { code, err } = await inject(utf16, true);
    expect(err).toMatch(/Pod\/web: injected/);
    expect(code).toBe(0);
  });

  it('exits 1 naming a directory given as a file', async () => {
    const { code, err } = await new Promise<{ code: number; err: string }>((resolve) =>
      execFile(process.execPath, [BIN, 'inject', '-f', dir], (error, _out, stderr) =>
        resolve({ code: error ? Number(error.code) : 0, err: stderr }),
      ),
    );
    expect(code).toBe(1);
    expect(err).toBe(`error: ${dir}: EISDIR: illegal operation on a directory, read\n`);
  });

  it('exits 1 with one line, no stack, for a file that is not text', async () => {
    const { code, out, err } = await inject(Buffer.from(POD, 'utf16le'));
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toMatch(/^error: .*pod\.yaml: .*UTF-16 without a byte-order mark/);
    expect(err).not.toMatch(/\n\s+at /);
  });
});
