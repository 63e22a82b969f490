// The lint rule that keeps import cycles out (eslint-rules/no-import-cycle.mjs), run the way
// `make lint` runs it: eslint in a child process, here over a throwaway workspace with one cycle
// through a type import and one file outside it.

import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(__dirname, '..', '..');
const eslintBin = path.join(root, 'node_modules', 'eslint', 'bin', 'eslint.js');
const rule = pathToFileURL(path.join(root, 'eslint-rules', 'no-import-cycle.mjs')).href;
const parser = pathToFileURL(require.resolve('@typescript-eslint/parser', { paths: [root] })).href;

interface Message {
  ruleId: string | null;
  message: string;
  line: number;
}

let dir = '';

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'outrigger-cycles-'));
  const files: Record<string, string> = {
    'eslint.config.mjs': `import local from ${JSON.stringify(rule)};
import * as parser from ${JSON.stringify(parser)};
export default [{
  files: ['**/*.ts'],
  languageOptions: { parser },
  plugins: { local },
  rules: { 'local/no-import-cycle': 'error' },
}];
`,
    // a -> b -> c -> a: c imports a only for a type, which is still an edge.
    'a.ts': `import { b } from './b';\nexport const a = (): number => b() + 1;\n`,
    'b.ts': `// import { nothing } from './d'; (a comment is no edge)\nexport { c as b } from './c.js';\n`,
    'c.ts': `import type { A } from './a';\nexport const c = (): A => 1;\n`,
    'a-type.ts': `export type A = number;\n`,
    // d imports the cycle, but nothing leads back to d.
    'd.ts': `import { a } from './a';\nimport { readFileSync } from 'node:fs';\nexport const d = a() + readFileSync.length;\n`,
  };
  // c's type A is declared by a, so a declares it too.
  files['a.ts'] += `export type { A } from './a-type';\n`;
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function lint(): Promise<Record<string, Message[]>> {
  // eslint exits 1 when it reports an error; its report is still on stdout.
  const stdout = await run(process.execPath, [eslintBin, '--format', 'json', '.'], {
    cwd: dir,
  }).then(
    (out) => out.stdout,
    (err: { stdout?: string }) => {
      if (!err.stdout) throw err;
      return err.stdout;
    },
  );
  const results = JSON.parse(stdout) as { filePath: string; messages: Message[] }[];
  return Object.fromEntries(results.map((r) => [path.basename(r.filePath), r.messages]));
}

describe('the no-import-cycle lint rule', () => {
  it('reports each file of a cycle at the import that starts it, with the whole path, and nothing else', async () => {
    const report = await lint();
    const cycles = (name: string) =>
      (report[name] ?? []).filter((m) => m.ruleId === 'local/no-import-cycle');
    expect(cycles('a.ts')).toEqual([
      expect.objectContaining({
        line: 1,
        message: expect.stringContaining('a.ts -> b.ts -> c.ts -> a.ts'),
      }),
    ]);
    expect(cycles('b.ts')).toEqual([
      expect.objectContaining({
        line: 2,
        message: expect.stringContaining('b.ts -> c.ts -> a.ts -> b.ts'),
      }),
    ]);
    expect(cycles('c.ts')).toEqual([
      expect.objectContaining({
        line: 1,
        message: expect.stringContaining('c.ts -> a.ts -> b.ts -> c.ts'),
      }),
    ]);
    expect(cycles('d.ts')).toEqual([]);
    expect(cycles('a-type.ts')).toEqual([]);
    // Nothing but the rule spoke: the files parse.
    for (const messages of Object.values(report))
      for (const m of messages) expect(m.ruleId).toBe('local/no-import-cycle');
  }, 60_000);
});
