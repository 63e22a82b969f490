// Golden tests of the injected form: every case in testdata/cases, and every corpus file when
// the corpus is there. Cases are discovered from the folders; a golden without an input fails;
// UPDATE_GOLDEN=1 rewrites the goldens, otherwise a stale one fails with a diff.

import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CORPUS_DIR, corpusFiles, describeWithCorpus } from '@outrigger/testkit';
import { renderGolden } from './golden-support';

const TESTDATA = join(__dirname, '..', 'testdata');
const GOLDEN = join(TESTDATA, 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

interface Case {
  /** The case's name in the report: its input's path under testdata/ or the corpus. */
  name: string;
  input: string;
  golden: string;
}

const isInput = (file: string): boolean => /\.ya?ml$/.test(file) && !file.endsWith('.config.yaml');
const goldenName = (file: string): string =>
  `${basename(file).replace(/\.ya?ml$/, '')}.golden.yaml`;

/** The own cases: testdata/cases/<name>.yaml, golden in testdata/golden/cases/. */
function ownCases(): Case[] {
  return readdirSync(join(TESTDATA, 'cases'))
    .filter(isInput)
    .sort()
    .map((file) => ({
      name: `testdata/cases/${file}`,
      input: join(TESTDATA, 'cases', file),
      golden: join(GOLDEN, 'cases', goldenName(file)),
    }));
}

/** The corpus's files: <folder>/<name>.yaml, golden in testdata/golden/corpus/<folder>/. */
function corpusCases(): Case[] {
  return corpusFiles()
    .filter(isInput)
    .map((file) => ({
      name: `corpus/${file}`,
      input: join(CORPUS_DIR, file),
      golden: join(GOLDEN, 'corpus', dirname(file), goldenName(file)),
    }));
}

function checkGolden(c: Case): void {
  const actual = renderGolden(c.input);
  if (UPDATE) {
    mkdirSync(dirname(c.golden), { recursive: true });
    writeFileSync(c.golden, actual);
  }
  if (!existsSync(c.golden))
    throw new Error(`no golden ${c.golden}; run with UPDATE_GOLDEN=1 to create it`);
  expect(actual).toEqual(readFileSync(c.golden, 'utf8'));
}

/** The goldens under `root` that no case produces, by file name; `skip` folders are not walked. */
function orphans(root: string, cases: Case[], skip: string[] = []): string[] {
  const expected = new Set(cases.map((c) => c.golden));
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const file = join(dir, e.name);
      if (!e.isDirectory()) return [file];
      return skip.includes(file) ? [] : walk(file);
    });
  return existsSync(root)
    ? walk(root)
        .filter((g) => !expected.has(g))
        .map((g) => basename(g))
    : [];
}

describe('golden injected form of the own cases', () => {
  const cases = ownCases();

  it('finds at least 20 own cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(20);
  });

  it.each(cases.map((c) => [c.name, c]))('%s', (_name, c) => checkGolden(c));

  it('has no golden without an input, outside the corpus goldens', () => {
    expect(orphans(GOLDEN, cases, [join(GOLDEN, 'corpus')])).toEqual([]);
  });
});

describeWithCorpus('golden injected form of the corpus', () => {
  const cases = corpusCases();

  it('finds the corpus: its istio and linkerd folders', () => {
    expect([...new Set(cases.map((c) => c.name.split('/')[1]))].sort()).toEqual([
      'istio',
      'linkerd',
    ]);
  });

  it.each(cases.map((c) => [c.name, c]))('%s', (_name, c) => checkGolden(c));

  it('has no corpus golden without an input', () => {
    expect(orphans(join(GOLDEN, 'corpus'), cases)).toEqual([]);
  });
});
