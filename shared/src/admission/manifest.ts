// Manual injection of YAML manifests (`outrigger inject`): every Pod and every workload's pod
// template is injected, everything else passes through; documents keep their order, and the
// report has one line per object.

import { applyPatch, type Operation } from 'fast-json-patch';
import { parseAllDocuments, stringify } from 'yaml';
import type { KubeObject } from '../kubernetes/k8s';
import { cloneJson, isRecord } from '../kubernetes/k8s';
import { injectPod, type ConfigSnapshot } from './inject';
import type { SkipReason } from './decide';
import type { Owner } from './owner';
import { podShapeIssue } from './shape';
import { describe } from '../config/schema';
import type { AddOperation } from './patch';
import { notPlainData, repeatedKey, tooDeep, valueOf, yamlMessage } from '../config/safe-yaml';

/** Where each kind keeps its pod template; a Pod is its own template. */
export const TEMPLATE_PATHS: Readonly<Record<string, readonly string[]>> = {
  Pod: [],
  Deployment: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  ReplicationController: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

export type ReportOutcome =
  | {
      outcome: 'injected';
      /** The sets injected, in applied order. */
      sets: string[];
      /** Why the proxy was left out, when only other sets were injected. */
      proxySkipped?: { reason: SkipReason; detail: string };
    }
  | { outcome: 'skipped'; reason: SkipReason; detail: string }
  | { outcome: 'unchanged' };

export type ReportEntry = ReportOutcome & { kind: string; name: string; warnings: string[] };
export type ReportLine = ReportEntry & { document: number };

export interface ManifestOptions {
  snapshot: ConfigSnapshot;
  nativeSidecarSupported: boolean;
}

export class ManifestParseError extends Error {
  constructor(
    readonly document: number,
    readonly line: number | undefined,
    readonly detail: string,
  ) {
    super(`document ${document}${line === undefined ? '' : `, line ${line}`}: ${detail}`);
    this.name = 'ManifestParseError';
  }
}

export interface ManifestResult {
  output: string;
  report: ReportLine[];
}

export function formatReportLine(line: ReportLine): string {
  const head = `${line.kind}/${line.name}: `;
  switch (line.outcome) {
    case 'injected':
      return `${head}injected${setsOf(line)}`;
    case 'skipped':
      return `${head}skipped (${line.reason})`;
    case 'unchanged':
      return `${head}unchanged (not a workload)`;
  }
}

/** The sets of an injection, when there is more to say than the proxy alone. */
function setsOf(line: Extract<ReportLine, { outcome: 'injected' }>): string {
  const skipped = line.proxySkipped ? `; proxy skipped (${line.proxySkipped.reason})` : '';
  if (line.sets.length === 1 && line.sets[0] === 'proxy') return '';
  return ` (${line.sets.join(', ')}${skipped})`;
}

/** Injects every pod template in a multi-document YAML text; throws ManifestParseError. */
export function injectManifest(text: string, options: ManifestOptions): ManifestResult {
  const deep = tooDeep(text);
  if (deep) throw new ManifestParseError(1, undefined, deep.message);
  // Merge keys (<<) as kubectl reads them; repeated keys found in one pass (repeatedKey), not
  // by the parser's check, which compares every key with every other.
  const docs = parseAllDocuments(text, { merge: true, uniqueKeys: false });
  if (!Array.isArray(docs)) return { output: '', report: [] };
  const out: string[] = [];
  const report: ReportLine[] = [];
  docs.forEach((doc, i) => {
    const number = i + 1;
    const error = doc.errors[0];
    if (error)
      throw new ManifestParseError(number, error.linePos?.[0].line, yamlMessage(error.message));
    const read = valueOf(doc);
    const problem =
      repeatedKey(doc) ?? ('problem' in read ? read.problem : notPlainData(read.value));
    if (problem) throw new ManifestParseError(number, undefined, problem.message);
    const value = 'value' in read ? read.value : undefined;
    if (value === null || value === undefined) return;
    const lines: ReportLine[] = [];
    const injected = injectValue(value, options, (r) => lines.push({ ...r, document: number }));
    report.push(...lines);
    const changed = lines.some((l) => l.outcome === 'injected');
    out.push(
      changed
        ? stringify(injected, { lineWidth: 0, aliasDuplicateObjects: false, version: '1.1' })
        : ensureNewline(String(doc)),
    );
  });
  return { output: out.join('---\n'), report };
}

function ensureNewline(s: string): string {
  const body = s.replace(/^---\n/, '');
  return body.endsWith('\n') ? body : `${body}\n`;
}

type Emit = (entry: ReportEntry) => void;

function nameOf(obj: KubeObject): string {
  const { name, generateName } = (isRecord(obj.metadata) ? obj.metadata : {}) as {
    name?: unknown;
    generateName?: unknown;
  };
  if (typeof name === 'string') return name;
  return typeof generateName === 'string' ? generateName : '<unnamed>';
}

/** A workload's own metadata the report and the owner read: a mapping, its names strings. */
function metadataIssue(obj: KubeObject): string | undefined {
  const meta: unknown = obj.metadata;
  if (meta === undefined || meta === null) return undefined;
  if (!isRecord(meta)) return `metadata must be a mapping; got ${describe(meta)}`;
  for (const key of ['name', 'generateName', 'namespace'])
    if (meta[key] !== undefined && meta[key] !== null && typeof meta[key] !== 'string')
      return `metadata.${key} must be a string; got ${describe(meta[key])}`;
  return undefined;
}

function injectValue(value: unknown, options: ManifestOptions, emit: Emit): unknown {
  if (value === null || value === undefined) return value;
  if (!isRecord(value)) {
    emit({ kind: '<not an object>', name: '-', outcome: 'unchanged', warnings: [] });
    return value;
  }
  const obj = value as KubeObject;
  const kind = typeof obj.kind === 'string' ? obj.kind : '<no kind>';
  if (kind.endsWith('List') && Array.isArray(obj.items)) {
    return { ...obj, items: obj.items.map((item) => injectValue(item, options, emit)) };
  }
  const path = TEMPLATE_PATHS[kind];
  if (path === undefined) {
    emit({ kind, name: nameOf(obj), outcome: 'unchanged', warnings: [] });
    return value;
  }
  return injectWorkload(obj, path, options, emit);
}

function getAt(obj: unknown, path: readonly string[]): unknown {
  return path.reduce<unknown>((o, k) => (isRecord(o) ? o[k] : undefined), obj);
}

function injectWorkload(
  obj: KubeObject,
  path: readonly string[],
  options: ManifestOptions,
  emit: Emit,
): unknown {
  const kind = obj.kind ?? '';
  const name = nameOf(obj);
  const template = getAt(obj, path);
  const owner: Owner | undefined = kind === 'Pod' ? undefined : { kind, name, source: 'template' };
  // As the webhook's review does: a field of the wrong type is named, not read.
  const shape =
    metadataIssue(obj) ??
    (isRecord(template)
      ? podShapeIssue(template, path.length > 0 ? path.join('.') : 'pod')
      : undefined);
  if (shape !== undefined) {
    emit({
      kind,
      name,
      outcome: 'skipped',
      reason: 'invalid-pod-spec',
      detail: shape,
      warnings: [],
    });
    return obj;
  }
  const result = injectPod({
    pod: isRecord(template) ? template : {},
    snapshot: options.snapshot,
    namespaceName: obj.metadata?.namespace,
    namespace: 'assume-enabled',
    nativeSidecarSupported: options.nativeSidecarSupported,
    ...(owner ? { owner } : {}),
  });
  if (!result.injected) {
    emit({
      kind,
      name,
      outcome: 'skipped',
      reason: result.reason,
      detail: result.detail,
      warnings: result.warnings,
    });
    return obj;
  }
  emit({
    kind,
    name,
    outcome: 'injected',
    sets: result.sets,
    ...(result.proxySkipped ? { proxySkipped: result.proxySkipped } : {}),
    warnings: result.warnings,
  });
  return applyAt(obj, path, result.patch);
}

/** Applies a pod patch to the template at `path` of a copy of `obj`. */
export function applyAt(
  obj: KubeObject,
  path: readonly string[],
  patch: readonly AddOperation[],
): KubeObject {
  const copy = cloneJson(obj);
  const ops = patch.map((o) => ({
    ...o,
    path: path.map((k) => `/${k}`).join('') + o.path,
  })) as Operation[];
  return applyPatch(copy, ops, true, true).newDocument;
}
