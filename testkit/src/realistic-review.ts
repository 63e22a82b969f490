// An AdmissionReview as a real API server sends it for a Deployment's pod: the pod carries the
// defaults the API server fills in, its ServiceAccount token volume, its owner reference and the
// managedFields of the ReplicaSet controller, and the review carries the requester and options.
// About 6 KB, where a hand-written manifest is well under 1 KB.

/** The pod of replica `index` of Deployment `name`, as the ReplicaSet controller creates it. */
export function realisticPod(name: string, index: number): Record<string, unknown> {
  const hash = '7c9f8d6b5d';
  const labels = { app: name, 'pod-template-hash': hash, tier: 'backend', version: 'v2' };
  return {
    metadata: {
      generateName: `${name}-${hash}-`,
      namespace: 'shop',
      uid: `0d3b9a6e-7c1f-4f55-9d2e-${String(index).padStart(12, '0')}`,
      creationTimestamp: '2026-11-30T10:00:00Z',
      labels,
      annotations: {
        'kubectl.kubernetes.io/restartedAt': '2026-11-30T09:59:58Z',
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9102',
      },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `${name}-${hash}`,
          uid: '5e0f7a4c-2b1d-4c3e-8f9a-0b1c2d3e4f5a',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [managedFields()],
    },
    spec: {
      volumes: [
        { name: 'config', configMap: { name: `${name}-config`, defaultMode: 420 } },
        serviceAccountVolume(),
      ],
      containers: [appContainer(name), sidecarContainer()],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: name,
      serviceAccount: name,
      securityContext: { runAsNonRoot: true, fsGroup: 2000 },
      schedulerName: 'default-scheduler',
      tolerations: ['not-ready', 'unreachable'].map((why) => ({
        key: `node.kubernetes.io/${why}`,
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: 300,
      })),
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    status: {},
  };
}

function appContainer(name: string): Record<string, unknown> {
  return {
    name,
    image: `registry.example.com/shop/${name}:2.14.3`,
    args: ['--listen=:8080', '--metrics=:9102', '--log-format=json'],
    ports: [
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9102, protocol: 'TCP' },
    ],
    env: [
      { name: 'LOG_LEVEL', value: 'info' },
      {
        name: 'POD_NAME',
        valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } },
      },
      { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: `${name}-db`, key: 'url' } } },
    ],
    resources: {
      limits: { cpu: '1', memory: '512Mi' },
      requests: { cpu: '250m', memory: '256Mi' },
    },
    volumeMounts: [
      { name: 'config', readOnly: true, mountPath: '/etc/app' },
      {
        name: 'kube-api-access-x7k2p',
        readOnly: true,
        mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
      },
    ],
    livenessProbe: probe('/healthz', 10),
    readinessProbe: probe('/ready', 5),
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
    securityContext: {
      capabilities: { drop: ['ALL'] },
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    },
  };
}

function sidecarContainer(): Record<string, unknown> {
  return {
    name: 'log-shipper',
    image: 'registry.example.com/infra/log-shipper:1.8.0',
    resources: { limits: { memory: '64Mi' }, requests: { cpu: '10m', memory: '32Mi' } },
    volumeMounts: [
      {
        name: 'kube-api-access-x7k2p',
        readOnly: true,
        mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
      },
    ],
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
  };
}

function probe(path: string, period: number): Record<string, unknown> {
  return {
    httpGet: { path, port: 8080, scheme: 'HTTP' },
    initialDelaySeconds: 5,
    timeoutSeconds: 1,
    periodSeconds: period,
    successThreshold: 1,
    failureThreshold: 3,
  };
}

function serviceAccountVolume(): Record<string, unknown> {
  return {
    name: 'kube-api-access-x7k2p',
    projected: {
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [
              {
                path: 'namespace',
                fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' },
              },
            ],
          },
        },
      ],
      defaultMode: 420,
    },
  };
}

/** The ReplicaSet controller's field ownership of everything it set. */
function managedFields(): Record<string, unknown> {
  const set = (...keys: string[]): Record<string, unknown> =>
    Object.fromEntries(keys.map((k) => [`f:${k}`, {}]));
  const container = {
    '.': {},
    ...set(
      'image',
      'imagePullPolicy',
      'name',
      'terminationMessagePath',
      'terminationMessagePolicy',
    ),
    'f:resources': {
      '.': {},
      'f:limits': set('cpu', 'memory'),
      'f:requests': set('cpu', 'memory'),
    },
    'f:securityContext': {
      '.': {},
      'f:capabilities': set('drop'),
      ...set('readOnlyRootFilesystem'),
    },
    'f:volumeMounts': {
      '.': {},
      'k:{"mountPath":"/etc/app"}': set('mountPath', 'name', 'readOnly'),
    },
  };
  return {
    manager: 'kube-controller-manager',
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-11-30T10:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': {
        'f:annotations': set('kubectl.kubernetes.io/restartedAt', 'prometheus.io/port'),
        'f:generateName': {},
        'f:labels': set('app', 'pod-template-hash', 'tier', 'version'),
        'f:ownerReferences': { '.': {}, 'k:{"uid":"5e0f7a4c-2b1d-4c3e-8f9a-0b1c2d3e4f5a"}': {} },
      },
      'f:spec': {
        'f:containers': {
          'k:{"name":"app"}': container,
          'k:{"name":"log-shipper"}': container,
        },
        ...set('dnsPolicy', 'enableServiceLinks', 'restartPolicy', 'schedulerName'),
        'f:securityContext': set('fsGroup', 'runAsNonRoot'),
        'f:volumes': { '.': {}, 'k:{"name":"config"}': { '.': {}, 'f:configMap': set('name') } },
      },
    },
  };
}

/**
 * The review of that pod's CREATE, as the API server posts it to /mutate/pods; the pod of the
 * Deployment `owner`.
 */
export function realisticReview(
  uid: string,
  index = 0,
  owner = 'checkout',
): Record<string, unknown> {
  const object = realisticPod(owner, index);
  return {
    kind: 'AdmissionReview',
    apiVersion: 'admission.k8s.io/v1',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      requestResource: { group: '', version: 'v1', resource: 'pods' },
      namespace: 'shop',
      operation: 'CREATE',
      userInfo: {
        username: 'system:serviceaccount:kube-system:replicaset-controller',
        uid: '9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d',
        groups: [
          'system:serviceaccounts',
          'system:serviceaccounts:kube-system',
          'system:authenticated',
        ],
      },
      object,
      oldObject: null,
      dryRun: false,
      options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
    },
  };
}
