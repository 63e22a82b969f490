// One write per owner for every wave that restarts it in a step: the proxy's and the sets'
// orders become one merge patch; a restart a set holds for its budget alone joins another wave's
// restart of the owner; a set whose stamp the template lacks is stamped with what its pods get.

import {
  CONFIG_REVISION,
  PROXY_KEYS,
  appliedSets,
  mustParseConfig,
  setWaveKeys,
  type OwnerAssessment,
  type OwnerRef,
  type RestartOrder,
  type Workload,
} from '@outrigger/shared';
import {
  joinableOwners,
  ordersByOwner,
  ownerRestartPatch,
  type PlannedWave,
} from '../src/wave/owner-restart';
import { proxyWave, setWave } from '../src/wave/wave-of';
import type { ActedOn } from '../src/wave/wave-contract';

const config = mustParseConfig(
  [
    'sets:',
    '  - name: shipper',
    '    containers: [{name: shipper, image: "ghcr.io/acme/shipper:1"}]',
    '  - name: agent',
    '    containers: [{name: agent, image: "ghcr.io/acme/agent:1"}]',
  ].join('\n'),
);
const inForce = { config, revision: 'aaaaaaaaaa' };
const setNamed = (name: string) => {
  const found = appliedSets(config).find((a) => a.set.name === name);
  if (!found) throw new Error(`no set ${name}`);
  return found;
};
const SHIPPER = setWaveKeys('shipper');
const AGENT = setWaveKeys('agent');
const web: OwnerRef = { namespace: 'shop', kind: 'Deployment', name: 'web' };
const api: OwnerRef = { namespace: 'shop', kind: 'Deployment', name: 'api' };

const workload: Workload = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', resourceVersion: '7' },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: {
        labels: { app: 'web', 'outrigger.dev/stamped': 'true' },
        annotations: {
          'outrigger.dev/owner-kind': 'Deployment',
          'outrigger.dev/owner-name': 'web',
          [CONFIG_REVISION]: '0000000000',
        },
      },
      spec: { containers: [{ name: 'app', image: 'web:1' }] },
    },
  },
} as unknown as Workload;

const order = (owner: OwnerRef, revision: string): RestartOrder => ({
  owner,
  kind: 'rollout',
  revision,
});

function planned(
  wave: PlannedWave['wave'],
  parts: { restart?: RestartOrder[]; joinable?: RestartOrder[]; unstamped?: string[] },
): PlannedWave {
  const plan = {
    restart: parts.restart ?? [],
    joinable: parts.joinable ?? [],
    unstamped: new Set(parts.unstamped ?? []),
  } as unknown as ActedOn;
  return { wave, plan };
}

const proxy = proxyWave(inForce);
const shipper = setWave(inForce, setNamed('shipper'));
const agent = setWave(inForce, setNamed('agent'));

test('the proxy and a set due at once on one owner: one write with both stamps and records', () => {
  const waves = [
    planned(proxy, { restart: [order(web, 'aaaaaaaaaa')] }),
    planned(shipper, { restart: [order(web, shipper.revision), order(api, shipper.revision)] }),
  ];
  const byOwner = ordersByOwner(waves, () => '');
  expect([...byOwner.keys()]).toEqual(['shop/Deployment/web', 'shop/Deployment/api']);
  const orders = byOwner.get('shop/Deployment/web') ?? [];
  expect(orders.map((o) => o.wave.keys.set)).toEqual(['proxy', 'shipper']);
  const patch = ownerRestartPatch(workload, orders, waves, Date.parse('2026-01-01T00:00:00Z'));
  expect(patch).toMatchObject({
    metadata: {
      resourceVersion: '7',
      annotations: {
        [PROXY_KEYS.restartedRevision]: 'aaaaaaaaaa',
        [SHIPPER.restartedRevision]: shipper.revision,
      },
      labels: { [PROXY_KEYS.completedRevision]: null, [SHIPPER.completedRevision]: null },
    },
    spec: {
      template: {
        metadata: {
          annotations: {
            [CONFIG_REVISION]: 'aaaaaaaaaa',
            [SHIPPER.configRevision]: shipper.revision,
          },
        },
      },
    },
  });
});

test('a set held by its budget alone joins the restart the proxy makes; not one held otherwise', () => {
  const waves = [
    planned(proxy, { restart: [order(web, 'aaaaaaaaaa')] }),
    planned(shipper, { joinable: [order(web, shipper.revision), order(api, shipper.revision)] }),
  ];
  const byOwner = ordersByOwner(waves, () => '');
  expect(byOwner.get('shop/Deployment/web')?.map((o) => [o.wave.keys.set, o.detail])).toEqual([
    ['proxy', ''],
    ['shipper', 'joined the restart made for proxy'],
  ]);
  // api is restarted by no wave: nothing for it to join.
  expect(byOwner.has('shop/Deployment/api')).toBe(false);
});

test("a set's restart stamps another set whose stamp the template lacks, with what its pods get", () => {
  const waves = [
    planned(proxy, {}),
    planned(shipper, { restart: [order(web, shipper.revision)] }),
    planned(agent, { unstamped: ['shop/Deployment/web'] }),
  ];
  const orders = ordersByOwner(waves, () => '').get('shop/Deployment/web') ?? [];
  const patch = ownerRestartPatch(workload, orders, waves, Date.now()) as {
    spec: { template: { metadata: { annotations: Record<string, string> } } };
    metadata: { annotations: Record<string, string> };
  };
  expect(patch.spec.template.metadata.annotations[AGENT.configRevision]).toBe(agent.revision);
  // ... without a restart record of the agent's: its wave did not restart the owner.
  expect(patch.metadata.annotations[AGENT.restartedRevision]).toBeUndefined();
  // The proxy's stamp is there already, so it is left as it is.
  expect(patch.spec.template.metadata.annotations[CONFIG_REVISION]).toBeUndefined();
});

test('only a rollout or a heal to the wave revision may join; not a rollback, a shed or a canary', () => {
  const a = (name: string, extra: Record<string, unknown>) =>
    ({
      owner: { namespace: 'shop', kind: 'Deployment', name },
      target: shipper.revision,
      canary: false,
      due: { kind: 'rollout', detail: '' },
      ...extra,
    }) as unknown as OwnerAssessment;
  const joins = joinableOwners(
    {
      active: [
        a('due', {}),
        a('rolling-back', { due: undefined }),
        a('shedding', { due: { kind: 'shed', detail: '' }, target: 'none' }),
        a('canary', { canary: true }),
      ],
      inWave: [],
    },
    shipper,
  );
  expect([...joins.keys()]).toEqual(['shop/Deployment/due']);
});
