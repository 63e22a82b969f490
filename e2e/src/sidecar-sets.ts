// What the sidecar-set suites share: the log shipper set as an admin writes it, the edit of the
// configuration's `sets` (and anything else) the way an admin makes it, and the wait for an
// owner's pods with every container running.

import type { V1Pod } from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  SYSTEM_NAMESPACE,
  appliedSets,
  configRevision,
  parseConfig,
  setRevisionLabel,
} from '@outrigger/shared';
import { MERGE_PATCH, type Cluster } from './cluster';
import { podReady, podsRunningWithProxy } from './sidecar';

import { done, pending, waitFor } from './wait';

export const SHIPPER_SET = 'log-shipper';
export const SHIPPER_CONTAINER = 'shipper';

/**
 * The log shipper set: a native sidecar that reads the app's logs, told its revision by the
 * pod's label. `env` is added to its container (SHIPPER_PORT=0 makes it exit at start).
 */
export function shipperSet(
  image: string,
  extra: { env?: { name: string; value: string }[]; rollout?: Record<string, unknown> } = {},
): Record<string, unknown> {
  return {
    name: SHIPPER_SET,
    containers: [
      {
        name: SHIPPER_CONTAINER,
        image,
        imagePullPolicy: 'Never',
        env: [
          {
            name: 'SHIPPER_REVISION',
            valueFrom: {
              fieldRef: { fieldPath: `metadata.labels['${setRevisionLabel(SHIPPER_SET)}']` },
            },
          },
          ...(extra.env ?? []),
        ],
        ports: [{ containerPort: 2020, name: 'shipper' }],
        readinessProbe: { httpGet: { path: '/ready', port: 2020 }, periodSeconds: 2 },
        resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '96Mi' } },
        securityContext: {
          runAsNonRoot: true,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        },
        volumeMounts: [{ name: 'app-logs', mountPath: '/var/log/app', readOnly: true }],
      },
    ],
    volumes: [{ name: 'app-logs', emptyDir: {} }],
    ...(extra.rollout ? { rollout: extra.rollout } : {}),
  };
}

export interface ConfigEdit {
  text: string;
  /** The proxy's revision, and each set's by name. */
  proxy: string;
  sets: Map<string, string>;
}

/** Edits config.yaml in the ConfigMap the way an admin does; returns it with its revisions. */
export async function editConfig(
  cluster: Cluster,
  edit: (set: (path: string[], value: unknown) => void) => void,
): Promise<ConfigEdit> {
  const cm = await cluster.core.readNamespacedConfigMap({
    name: CONFIG_MAP_NAME,
    namespace: SYSTEM_NAMESPACE,
  });
  const doc = parseDocument(cm.data?.[CONFIG_MAP_KEY] ?? '');
  edit((p, value) => doc.setIn(p, value));
  const text = doc.toString();
  await cluster.core.patchNamespacedConfigMap(
    {
      name: CONFIG_MAP_NAME,
      namespace: SYSTEM_NAMESPACE,
      body: { data: { [CONFIG_MAP_KEY]: text } },
    },
    MERGE_PATCH,
  );
  // An edit may be invalid on purpose (a test of a refused configuration): no revisions then.
  const read = parseConfig(text);
  if (!read.ok) return { text, proxy: '', sets: new Map() };
  const sets = new Map(appliedSets(read.config).map((a) => [a.set.name, a.revision]));
  return { text, proxy: configRevision(read.config), sets };
}

/** Writes config.yaml with `sets` as given; returns the text. */
export async function writeSets(cluster: Cluster, sets: unknown[]): Promise<string> {
  return (await editConfig(cluster, (set) => set(['sets'], sets))).text;
}

/** Pods of `app=<name>`, `count` of them, Running and Ready with the proxy and every container running. */
export async function runningWithSets(
  cluster: Cluster,
  namespace: string,
  name: string,
  count: number,
): Promise<V1Pod[]> {
  const pods = await podsRunningWithProxy(cluster, namespace, `app=${name}`, count);
  return waitFor(
    `the ${count} pods of ${name} with every container running`,
    async () => {
      const live = (
        await cluster.core.listNamespacedPod({ namespace, labelSelector: `app=${name}` })
      ).items.filter((p) => !p.metadata?.deletionTimestamp);
      const statuses = (p: V1Pod) => [
        ...(p.status?.initContainerStatuses ?? []),
        ...(p.status?.containerStatuses ?? []),
      ];
      const running = live.filter(
        (p) =>
          podReady(p) &&
          statuses(p)
            .filter((s) => s.name !== 'outrigger-init')
            .every((s) => s.state?.running),
      );
      return running.length === count && live.length === count && pods.length === count
        ? done(live)
        : pending(
            live.map((p) => [
              p.metadata?.name,
              statuses(p).map((s) => [s.name, Object.keys(s.state ?? {})]),
            ]),
          );
    },
    { timeoutMs: 3 * 60_000, intervalMs: 1000 },
  );
}
