// Golden tests of the injected form: every corpus file and every case in testdata/cases.
// Cases are discovered from the folders; a golden without an input fails; UPDATE_GOLDEN=1
// rewrites the goldens, otherwise a stale one fails with a diff.

import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { renderGolden } from './golden-support';

const TESTDATA = join(__dirname, '..', 'testdata');
const GOLDEN = join(TESTDATA, 'golden');
const CORPUS = join(__dirname, '..', '..', '..', 'shared', 'corpus');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

interface Case {
  input: string;
  golden: string;
}

function inputsIn(dir: string, goldenDir: string): Case[] {
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f) && !f.endsWith('.config.yaml'))
    .sort()
    .map((f) => ({
      input: join(dir, f),
      golden: join(goldenDir, `${f.replace(/\.ya?ml$/, '')}.golden.yaml`),
    }));
}

const HAVE_CORPUS = existsSync(CORPUS);
if (!HAVE_CORPUS) process.stderr.write(`corpus not found at ${CORPUS}: skipping its goldens\n`);
const corpusFolders = HAVE_CORPUS
  ? readdirSync(CORPUS, { withFileTypes: true }).filter((d) => d.isDirectory())
  : [];
const cases: Case[] = [
  ...inputsIn(join(TESTDATA, 'cases'), join(GOLDEN, 'cases')),
  ...corpusFolders.flatMap((d) => inputsIn(join(CORPUS, d.name), join(GOLDEN, 'corpus', d.name))),
];

describe('golden injected form', () => {
  (HAVE_CORPUS ? it : it.skip)('finds the corpus', () => {
    expect(corpusFolders.map((d) => d.name).sort()).toEqual(['istio', 'linkerd']);
  });

  it('finds at least 20 own cases', () => {
    expect(cases.filter((c) => c.input.startsWith(TESTDATA)).length).toBeGreaterThanOrEqual(20);
  });

  it.each(cases.map((c) => [relative(join(TESTDATA, '..'), c.input).replace(/^(\.\.\/)+/, ''), c]))(
    '%s',
    (_name, c) => {
      const actual = renderGolden(c.input);
      if (UPDATE) {
        mkdirSync(join(c.golden, '..'), { recursive: true });
        writeFileSync(c.golden, actual);
      }
      if (!existsSync(c.golden))
        throw new Error(`no golden ${c.golden}; run with UPDATE_GOLDEN=1 to create it`);
      expect(actual).toEqual(readFileSync(c.golden, 'utf8'));
    },
  );

  it('has no golden without an input', () => {
    const expected = new Set(cases.map((c) => c.golden));
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
      );
    // Without the corpus its goldens have no inputs here: only the own cases' are checked.
    const root = HAVE_CORPUS ? GOLDEN : join(GOLDEN, 'cases');
    const orphans = existsSync(root) ? walk(root).filter((g) => !expected.has(g)) : [];
    expect(orphans.map((g) => basename(g))).toEqual([]);
  });
});
