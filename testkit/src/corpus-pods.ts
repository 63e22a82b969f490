// The pods of the corpus: every Pod, and the pod template of every workload, in its files, as
// the API server would send them to the webhook. Which kinds hold a template, and where, is
// shared's TEMPLATE_PATHS, passed in: testkit does not depend on shared, whose tests use it.

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { CORPUS_DIR, corpusFiles } from './corpus';

/** Where each kind that makes pods keeps its pod template ([] for a Pod: the object itself). */
export type TemplatePaths = Readonly<Record<string, readonly string[]>>;

export interface CorpusPod {
  /** The file, relative to the corpus folder: `istio/hello.yaml`. */
  file: string;
  /** The kind of the object the pod comes from: Pod, Deployment, CronJob... */
  kind: string;
  pod: Record<string, unknown>;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The pods of one parsed document, a List's items included. */
function podsOf(value: unknown, templatePaths: TemplatePaths): Omit<CorpusPod, 'file'>[] {
  if (!isRecord(value)) return [];
  if (Array.isArray(value.items)) return value.items.flatMap((i) => podsOf(i, templatePaths));
  const kind = typeof value.kind === 'string' ? value.kind : '';
  const at = templatePaths[kind];
  if (!at) return [];
  const pod = at.reduce<unknown>((o, key) => (isRecord(o) ? o[key] : undefined), value);
  return isRecord(pod) ? [{ kind, pod }] : [];
}

/**
 * Every pod in the corpus, file by file; documents that do not parse (one file is broken YAML
 * on purpose) are left out. Throws, naming the folder, when the corpus is absent.
 */
export function corpusPods(templatePaths: TemplatePaths, dir = CORPUS_DIR): CorpusPod[] {
  return corpusFiles(dir).flatMap((file) =>
    parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))
      .filter((doc) => doc.errors.length === 0)
      .flatMap((doc) => podsOf(doc.toJS(), templatePaths).map((p) => ({ file, ...p }))),
  );
}
