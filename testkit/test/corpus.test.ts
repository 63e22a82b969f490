import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  CORPUS_DIR,
  corpusAbsent,
  corpusFiles,
  corpusPods,
  describeWithCorpus,
  haveCorpus,
} from '../src';

/** A corpus of our own: two folders of YAML, a file that is not YAML, and a broken document. */
function tinyCorpus(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'outrigger-corpus-'));
  mkdirSync(path.join(dir, 'b'));
  mkdirSync(path.join(dir, 'a'));
  writeFileSync(path.join(dir, 'README.md'), 'not a folder of the corpus\n');
  writeFileSync(path.join(dir, 'a', 'notes.txt'), 'not YAML\n');
  writeFileSync(
    path.join(dir, 'a', 'web.yaml'),
    [
      'kind: Deployment',
      'spec: {template: {metadata: {name: web}}}',
      '---',
      'kind: Service',
      '---',
      'kind: List',
      'items: [{kind: Pod, metadata: {name: one}}, {kind: CronJob, spec: {jobTemplate: {spec: {template: {metadata: {name: cron}}}}}}]',
      '',
    ].join('\n'),
  );
  writeFileSync(path.join(dir, 'b', 'broken.yml'), 'kind: Pod\n---\nkind: [Pod\n');
  return dir;
}

const TEMPLATE_PATHS = {
  Pod: [],
  Deployment: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

// Declared while the file is collected, as a suite of another file would be.
const absent = path.join(tmpdir(), `outrigger-no-corpus-${process.pid}`);
const present = tinyCorpus();
const stderr: string[] = [];
const calls: string[] = [];
const spy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
  stderr.push(String(chunk));
  return true;
});
describeWithCorpus(
  'a suite over an absent corpus',
  () => {
    calls.push('absent');
    it('never runs', () => {
      throw new Error('a suite without its corpus ran');
    });
  },
  absent,
);
describeWithCorpus(
  'a suite over a present corpus',
  () => {
    calls.push('present');
    it('runs', () => void calls.push('present ran'));
  },
  present,
);
spy.mockRestore();

describe('describeWithCorpus', () => {
  it('skips a suite whose corpus is absent without calling it, saying so in one line', () => {
    expect(calls).toEqual(['present', 'present ran']);
    expect(stderr).toEqual([
      `a suite over an absent corpus: skipped, the corpus folder ${absent} is absent (../shared/corpus beside the repository)\n`,
    ]);
    expect(stderr[0]).toBe(`${corpusAbsent('a suite over an absent corpus', absent)}\n`);
  });
});

describe('the corpus', () => {
  it('is ../shared/corpus beside the repository', () => {
    expect(CORPUS_DIR).toBe(path.resolve(__dirname, '..', '..', '..', 'shared', 'corpus'));
  });

  it('lists the YAML files of its folders, relative to it, in order, and nothing else', () => {
    expect(haveCorpus(present)).toBe(true);
    expect(corpusFiles(present)).toEqual(['a/web.yaml', 'b/broken.yml']);
  });

  it('refuses to list an absent corpus, naming the folder', () => {
    expect(haveCorpus(absent)).toBe(false);
    expect(() => corpusFiles(absent)).toThrow(`the corpus folder ${absent} is absent`);
  });

  it('holds the pods of its Pods, workloads and Lists, not of other kinds or broken documents', () => {
    expect(corpusPods(TEMPLATE_PATHS, present)).toEqual([
      { file: 'a/web.yaml', kind: 'Deployment', pod: { metadata: { name: 'web' } } },
      { file: 'a/web.yaml', kind: 'Pod', pod: { kind: 'Pod', metadata: { name: 'one' } } },
      { file: 'a/web.yaml', kind: 'CronJob', pod: { metadata: { name: 'cron' } } },
      { file: 'b/broken.yml', kind: 'Pod', pod: { kind: 'Pod' } },
    ]);
  });
});
