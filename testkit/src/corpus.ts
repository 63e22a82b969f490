// The corpus: real manifests from two other injectors' test suites, kept in ../shared/corpus
// beside the repository and read from there, never copied in. A clone alone has no corpus, and
// its suites still pass: a suite that reads it is declared with describeWithCorpus, which skips
// it then with one line on stderr that names the folder.

import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';

/** The repository's root: the nearest folder above this file that holds testkit/. */
function repositoryRoot(start = __dirname): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'testkit', 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no testkit/package.json above ${start}`);
  }
}

/** ../shared/corpus beside the repository, the same from the sources (jest) and from dist/. */
export const CORPUS_DIR = path.resolve(repositoryRoot(), '..', 'shared', 'corpus');

/** Whether the corpus folder is there. */
export function haveCorpus(dir = CORPUS_DIR): boolean {
  return existsSync(dir);
}

/** Why a suite or a benchmark's row that reads the corpus did not run. */
export function corpusAbsent(what: string, dir = CORPUS_DIR): string {
  return `${what}: skipped, the corpus folder ${dir} is absent (../shared/corpus beside the repository)`;
}

/**
 * Every YAML file in the corpus's folders (istio/, linkerd/), as a path relative to the corpus
 * folder (`istio/hello.yaml`), in order. Throws, naming the folder, when it is absent.
 */
export function corpusFiles(dir = CORPUS_DIR): string[] {
  if (!haveCorpus(dir))
    throw new Error(
      `the corpus folder ${dir} is absent: put the corpus in ../shared/corpus beside the ` +
        'repository, or read it only when haveCorpus() is true',
    );
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((folder) =>
      readdirSync(path.join(dir, folder.name))
        .filter((file) => /\.ya?ml$/.test(file))
        .map((file) => `${folder.name}/${file}`),
    )
    .sort();
}

/**
 * `describe(name, fn)` when the corpus is there. Without it, the suite is declared skipped with
 * one test that says why, `fn` is not called (so nothing reads the absent folder), and one line
 * on stderr names the folder.
 */
export function describeWithCorpus(name: string, fn: () => void, dir = CORPUS_DIR): void {
  if (haveCorpus(dir)) return describe(name, fn);
  process.stderr.write(`${corpusAbsent(name, dir)}\n`);
  describe.skip(name, () => it(`needs the corpus folder ${dir}`, () => undefined));
}
