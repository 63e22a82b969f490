// The shape check of the fields injection reads: each wrong type is named by its path, with a
// bounded quote of the value, and every well-typed or absent field passes.

import { podShapeIssue, workloadShapeIssue } from '../src/admission/shape';

const pod = (spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
  metadata: { name: 'p', ...metadata },
  spec: { containers: [{ name: 'app', image: 'app:1' }], ...spec },
});

describe('podShapeIssue', () => {
  it('passes a well-typed pod, and absent or null fields', () => {
    expect(podShapeIssue(pod({}), 'o')).toBeUndefined();
    expect(podShapeIssue({}, 'o')).toBeUndefined();
    expect(podShapeIssue(pod({ volumes: null, hostNetwork: null }, { labels: null }), 'o')).toBe(
      undefined,
    );
  });

  it.each([
    [pod({ containers: 'nope' }), 'o.spec.containers must be a list; got string "nope"'],
    [pod({ containers: [7] }), 'o.spec.containers[0] must be a mapping; got number 7'],
    [
      pod({ containers: [{ name: ['a'] }] }),
      'o.spec.containers[0].name must be a string; got a list',
    ],
    [
      pod({ containers: [{ name: 'a', ports: [{ containerPort: '80' }] }] }),
      'o.spec.containers[0].ports[0].containerPort must be an integer; got string "80"',
    ],
    [pod({ initContainers: {} }), 'o.spec.initContainers must be a list; got a mapping'],
    [pod({ volumes: [{ name: 1 }] }), 'o.spec.volumes[0].name must be a string; got number 1'],
    [pod({ hostNetwork: 'true' }), 'o.spec.hostNetwork must be a boolean; got string "true"'],
    [pod({}, { labels: { a: 1 } }), 'o.metadata.labels.a must be a string; got number 1'],
    [
      pod({}, { annotations: [] }),
      'o.metadata.annotations must be a mapping of strings; got a list',
    ],
    [pod({}, { ownerReferences: {} }), 'o.metadata.ownerReferences must be a list; got a mapping'],
    [
      pod({}, { ownerReferences: [{ kind: 'ReplicaSet', name: 'r', controller: 'yes' }] }),
      'o.metadata.ownerReferences[0].controller must be a boolean; got string "yes"',
    ],
    [
      pod({}, { ownerReferences: [{ name: 'r' }] }),
      'o.metadata.ownerReferences[0].kind is required: set it to a string',
    ],
    [
      pod({}, { ownerReferences: [{ kind: 'ReplicaSet', name: null }] }),
      'o.metadata.ownerReferences[0].name is required: set it to a string',
    ],
    [
      pod({}, { ownerReferences: [{ kind: 'ReplicaSet', name: 7 }] }),
      'o.metadata.ownerReferences[0].name must be a string; got number 7',
    ],
    [{ metadata: 'm' }, 'o.metadata must be a mapping; got string "m"'],
    [{ spec: [] }, 'o.spec must be a mapping; got a list'],
  ])('names the field: %#', (object, message) => {
    expect(podShapeIssue(object, 'o')).toBe(message);
  });

  it('quotes at most a short prefix of a huge value or key', () => {
    const huge = 'x'.repeat(1_000_000);
    const issue = podShapeIssue(pod({}, { name: huge.split('') }), 'o') ?? '';
    expect(issue).toBe('o.metadata.name must be a string; got a list');
    const keyed = podShapeIssue(pod({}, { labels: { [huge]: 1 } }), 'o') ?? '';
    expect(keyed.length).toBeLessThan(200);
    const valued = podShapeIssue(pod({ restartPolicy: 5 }, { generateName: 3 }), 'o') ?? '';
    expect(valued).toBe('o.metadata.generateName must be a string; got number 3');
    expect((podShapeIssue(pod({ hostNetwork: huge }), 'o') ?? '').length).toBeLessThan(200);
  });
});

describe('workloadShapeIssue', () => {
  it('checks the pod template and the fields of the workload itself', () => {
    const template = pod({});
    expect(workloadShapeIssue({ metadata: { name: 'd' }, spec: { template } }, 'w')).toBe(
      undefined,
    );
    expect(workloadShapeIssue({ spec: { template: 'x' } }, 'w')).toBe(
      'w.spec.template must be a mapping; got string "x"',
    );
    expect(workloadShapeIssue({ spec: { template: pod({ containers: 1 }) } }, 'w')).toBe(
      'w.spec.template.spec.containers must be a list; got number 1',
    );
    expect(workloadShapeIssue({ spec: { replicas: 1.5 } }, 'w')).toBe(
      'w.spec.replicas must be an integer; got number 1.5',
    );
  });
});
