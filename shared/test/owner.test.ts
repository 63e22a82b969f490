import { deploymentOfReplicaSet, resolveOwner, type PodLike } from '../src';

const rs = (name: string, hash?: string): PodLike => ({
  metadata: {
    labels: hash ? { 'pod-template-hash': hash } : {},
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name, controller: true }],
  },
});

describe('owner', () => {
  it('prefers the stamp', () => {
    const pod = {
      metadata: {
        ...rs('web-abc', 'abc').metadata,
        annotations: {
          'outrigger.dev/owner-kind': 'Deployment',
          'outrigger.dev/owner-name': 'web',
        },
      },
    };
    expect(resolveOwner(pod)).toEqual({ kind: 'Deployment', name: 'web', source: 'stamp' });
  });

  it('resolves a ReplicaSet to its Deployment by the pod-template-hash suffix', () => {
    expect(resolveOwner(rs('web-7d4b9c8f6d', '7d4b9c8f6d'))).toEqual({
      kind: 'Deployment',
      name: 'web',
      source: 'owner-reference',
    });
    expect(resolveOwner(rs('my-app-v2-5f6c7', '5f6c7'))).toMatchObject({
      kind: 'Deployment',
      name: 'my-app-v2',
    });
  });

  it('reports a bare ReplicaSet as what it is', () => {
    expect(resolveOwner(rs('standalone'))).toEqual({
      kind: 'ReplicaSet',
      name: 'standalone',
      source: 'owner-reference',
    });
    expect(resolveOwner(rs('standalone', 'zzz'))).toMatchObject({ kind: 'ReplicaSet' });
    expect(deploymentOfReplicaSet('-abc', 'abc')).toBeUndefined();
  });

  it('takes direct owners and prefers the controller reference', () => {
    const pod = {
      metadata: {
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'not-me' },
          { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', controller: true },
        ],
      },
    };
    expect(resolveOwner(pod)).toEqual({
      kind: 'StatefulSet',
      name: 'db',
      source: 'owner-reference',
    });
    const job = {
      metadata: {
        ownerReferences: [
          { apiVersion: 'batch/v1', kind: 'Job', name: 'nightly-2890', controller: true },
        ],
      },
    };
    expect(resolveOwner(job)).toMatchObject({ kind: 'Job', name: 'nightly-2890' });
  });

  it('makes a bare pod its own owner', () => {
    expect(resolveOwner({ metadata: { name: 'debug' } })).toEqual({
      kind: 'Pod',
      name: 'debug',
      source: 'none',
    });
    expect(resolveOwner({ metadata: { generateName: 'debug-' } })).toMatchObject({
      kind: 'Pod',
      name: 'debug-',
    });
    expect(resolveOwner({})).toEqual({ kind: 'Pod', name: '', source: 'none' });
  });
});
