// manifests/install.yaml, rendered from the Helm chart: what ships, read by tests and
// benchmarks so they run the components as the chart does (their environment, their limits).

import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';

/** One object of the manifests, as far as the tests read it. */
export interface ShippedManifest {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

export interface ShippedContainer {
  name: string;
  env?: { name: string; value?: string }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

export type Component = 'controller' | 'webhook';

/** manifests/install.yaml in the nearest folder above this file that has one. */
export function installYamlPath(start = __dirname): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'manifests', 'install.yaml');
    if (existsSync(file)) return file;
    if (path.dirname(dir) === dir) throw new Error(`no manifests/install.yaml above ${start}`);
  }
}

/** Every object of manifests/install.yaml, in order. */
export function shippedManifests(): ShippedManifest[] {
  return parseAllDocuments(readFileSync(installYamlPath(), 'utf8'))
    .map((doc) => doc.toJS() as ShippedManifest | null)
    .filter((o): o is ShippedManifest => o !== null && typeof o === 'object');
}

/** The component's container as its shipped Deployment runs it. */
export function shippedContainer(component: Component): ShippedContainer {
  for (const m of shippedManifests()) {
    if (m.kind !== 'Deployment') continue;
    const spec = m.spec as { template?: { spec?: { containers?: ShippedContainer[] } } };
    const found = spec.template?.spec?.containers?.find((c) => c.name === component);
    if (found) return found;
  }
  throw new Error(`manifests/install.yaml has no ${component} container`);
}

/** The environment the shipped manifests give the component (its V8 and malloc settings). */
export function shippedEnv(component: Component): Record<string, string> {
  return Object.fromEntries(
    (shippedContainer(component).env ?? []).map((e) => [e.name, e.value ?? '']),
  );
}

/** The memory limit the shipped manifests give the component's container, in MiB. */
export function shippedMemoryLimitMiB(component: Component): number {
  const limit = shippedContainer(component).resources?.limits?.memory ?? '';
  const match = /^(\d+)(Mi|Gi)$/.exec(limit);
  if (!match) throw new Error(`the ${component}'s memory limit ${limit} is not in Mi or Gi`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}
