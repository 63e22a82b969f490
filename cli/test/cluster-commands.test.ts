// The cluster commands' requests and reports, against a stand-in that answers fixed objects and
// records what was asked (the end-to-end suites run the same commands against a real cluster):
// `check` with every check passing and with a Lease that cannot be read, `status`, `restart`
// and `resume`, and the kubeconfig flags (--context, --config-map) as usage errors.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_CONFIG_YAML,
  INJECT,
  LEASE_NAME,
  OWNER_KIND,
  OWNER_NAME,
  RESUME,
  REVISION,
  TLS_SECRET_NAME,
  WEBHOOK_CONFIGURATION_NAME,
  WEBHOOK_SERVICE,
  configRevision,
  mustParseConfig,
} from '@outrigger/shared';
import { formatMicroTime } from '@outrigger/kube';
import { makeServingCert } from '@outrigger/testkit';
import { run } from '../src/main';
import type { Io } from '../src/io';

const SYSTEM = 'outrigger-system';
const REVISION_NOW = configRevision(mustParseConfig(DEFAULT_CONFIG_YAML));
const OLD = '0000000000';

interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  authorization: string | undefined;
  body: unknown;
}

type Answer = { status?: number; body: unknown };

/** Answers GETs from `objects` by path (404 otherwise) and writes by `writes`; records each. */
class StandIn {
  readonly requests: Recorded[] = [];
  objects = new Map<string, unknown>();
  writes = new Map<string, (body: unknown) => Answer>();
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.answer(req).then(({ status = 200, body }) => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    this.url = `http://127.0.0.1:${address.port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server?.close(() => resolve()));
  }

  private async answer(req: IncomingMessage): Promise<Answer> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://here');
    const method = req.method ?? '';
    this.requests.push({
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      contentType: req.headers['content-type'],
      authorization: req.headers.authorization,
      body: text ? (JSON.parse(text) as unknown) : undefined,
    });
    const write = this.writes.get(`${method} ${url.pathname}`);
    if (write) return write(text ? JSON.parse(text) : undefined);
    const object = method === 'GET' ? this.objects.get(url.pathname) : undefined;
    if (object !== undefined) return { body: object };
    return {
      status: 404,
      body: { kind: 'Status', message: `${url.pathname.split('/').at(-1) ?? ''} not found` },
    };
  }
}

function fakeIo(): Io & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    readFile: () => Promise.reject(new Error('no files')),
    readStdin: () => Promise.resolve(''),
    stdout: (t: string) => void (io.out += t),
    stderr: (t: string) => void (io.err += t),
  };
  return io;
}

const dir = mkdtempSync(join(tmpdir(), 'outrigger-cli-cluster-'));
const api = new StandIn();
let kubeconfig = '';

beforeAll(async () => {
  await api.start();
  kubeconfig = join(dir, 'config');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      'current-context': 'here',
      contexts: [{ name: 'here', context: { cluster: 'c', user: 'admin' } }],
      clusters: [{ name: 'c', cluster: { server: api.url } }],
      users: [{ name: 'admin', user: { token: 'secret-token' } }],
    }),
  );
});

afterAll(async () => {
  await api.stop();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  api.requests.length = 0;
  api.objects = new Map();
  api.writes = new Map();
  api.objects.set(`/api/v1/namespaces/${SYSTEM}/configmaps/outrigger-config`, {
    metadata: { name: 'outrigger-config', namespace: SYSTEM },
    data: { 'config.yaml': DEFAULT_CONFIG_YAML },
  });
});

const outrigger = async (...args: string[]) => {
  const io = fakeIo();
  const code = await run([...args, '--kubeconfig', kubeconfig], io);
  return { code, out: io.out, err: io.err };
};

describe('outrigger check', () => {
  const lease = (renewTime: string) => ({
    metadata: { namespace: SYSTEM, name: LEASE_NAME },
    spec: { holderIdentity: 'controller-1', leaseDurationSeconds: 15, renewTime },
  });

  beforeEach(() => {
    const cert = makeServingCert({ hosts: [`${WEBHOOK_SERVICE}.${SYSTEM}.svc`], days: 30 });
    const o = api.objects;
    o.set('/version', { major: '1', minor: '31', gitVersion: 'v1.31.2' });
    o.set(
      `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${WEBHOOK_CONFIGURATION_NAME}`,
      {
        webhooks: [
          { name: 'pods.outrigger.dev', clientConfig: { service: {}, caBundle: cert.caBundle } },
        ],
      },
    );
    for (const name of ['outrigger-webhook', 'outrigger-controller'])
      o.set(`/apis/apps/v1/namespaces/${SYSTEM}/deployments/${name}`, {
        spec: { replicas: 2 },
        status: { readyReplicas: 2 },
      });
    o.set(
      `/apis/coordination.k8s.io/v1/namespaces/${SYSTEM}/leases/${LEASE_NAME}`,
      lease(formatMicroTime(Date.now() - 3000)),
    );
    o.set(`/api/v1/namespaces/${SYSTEM}/secrets/${TLS_SECRET_NAME}`, {
      data: { 'tls.crt': Buffer.from(cert.certPem).toString('base64') },
    });
    api.writes.set('POST /apis/authorization.k8s.io/v1/subjectaccessreviews', () => ({
      body: { status: { allowed: true } },
    }));
    api.writes.set('POST /api/v1/namespaces/default/pods', () => ({
      body: { metadata: { labels: { [REVISION]: REVISION_NOW } } },
    }));
  });

  it('passes every check on a healthy install, and says so line by line', async () => {
    const { code, out } = await outrigger('check');
    expect(out).toBe(
      [
        `√ API server reachable, version supported: Kubernetes v1.31.2 at ${api.url}`,
        `√ configuration valid: ConfigMap ${SYSTEM}/outrigger-config is valid`,
        '√ webhook configuration present: 1 entries, each with a caBundle',
        '√ components ready: outrigger-webhook 2/2, outrigger-controller 2/2',
        '√ controller leader present: controller-1 leads (renewed 3 s ago)',
        '√ RBAC sufficient: both ServiceAccounts have the 11 rights checked',
        `√ serving certificate trusted and current: verified by the caBundle, for ${WEBHOOK_SERVICE}.${SYSTEM}.svc, 29 days left`,
        '√ admission policies in force: admission.mode=webhook: the webhook injects every pod, no policies to keep',
        `√ webhook answering: a dry-run pod in default was injected at revision ${REVISION_NOW}`,
        '',
        'Status check results are √',
        '',
      ].join('\n'),
    );
    expect(code).toBe(0);
    expect(api.requests.every((r) => r.authorization === 'Bearer secret-token')).toBe(true);
    const reviews = api.requests.filter((r) => r.path.endsWith('/subjectaccessreviews'));
    expect(reviews).toHaveLength(11);
    expect(reviews[0]?.body).toMatchObject({
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: `system:serviceaccount:${SYSTEM}:outrigger-controller`,
        resourceAttributes: { verb: 'patch', group: '', resource: 'namespaces' },
      },
    });
    const probe = api.requests.find((r) => r.path === '/api/v1/namespaces/default/pods');
    expect(probe).toMatchObject({
      method: 'POST',
      query: { dryRun: 'All' },
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { labels: { [INJECT]: 'enabled' } } },
    });
  });

  it('fails the leader check, naming the Lease and the field, for a time that does not parse', async () => {
    api.objects.set(
      `/apis/coordination.k8s.io/v1/namespaces/${SYSTEM}/leases/${LEASE_NAME}`,
      lease('yesterday'),
    );
    const { code, out } = await outrigger('check');
    expect(code).toBe(1);
    expect(out).toContain(
      `× controller leader present: Lease ${SYSTEM}/${LEASE_NAME}: spec.renewTime "yesterday" is not an RFC 3339 time`,
    );
    expect(out).toContain('\n1 check(s) failed\n');
  });

  it('in the policy mode, checks the policy of the revision in force and what policies cannot read', async () => {
    const o = api.objects;
    o.set(`/apis/apps/v1/namespaces/${SYSTEM}/deployments/outrigger-controller`, {
      spec: {
        replicas: 1,
        template: { spec: { containers: [{ args: ['--admission-mode=policy'] }] } },
      },
      status: { readyReplicas: 1 },
    });
    const policies = '/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies';
    o.set(policies, { items: [{ metadata: { name: `outrigger-proxy-${OLD}` } }] });
    o.set('/api/v1/namespaces', { items: [{ metadata: { name: 'shop' } }] });
    for (const r of ['deployments', 'statefulsets', 'daemonsets'])
      o.set(`/apis/apps/v1/${r}`, { items: [] });
    expect((await outrigger('check')).out).toContain(
      `× admission policies in force: no policy outrigger-proxy-${REVISION_NOW} for the revision in force (1 kept)`,
    );
    o.set(policies, { items: [{ metadata: { name: `outrigger-proxy-${REVISION_NOW}` } }] });
    expect((await outrigger('check')).out).toContain(
      '√ admission policies in force: admission.mode=policy: 1 policies kept, the revision in force among them',
    );
    o.set('/apis/apps/v1/deployments', {
      items: [
        {
          metadata: { namespace: 'shop', name: 'tuned' },
          spec: {
            template: { metadata: { annotations: { 'config.outrigger.dev/proxy-image': 'x' } } },
          },
        },
      ],
    });
    o.set('/api/v1/namespaces', {
      items: [
        {
          metadata: {
            name: 'shop',
            annotations: { 'log-shipper.sets.outrigger.dev/inject': 'disabled' },
          },
        },
      ],
    });
    const { code, out } = await outrigger('check');
    expect(code).toBe(1);
    expect(out).toContain(
      '× admission policies in force: the policies cannot apply what these ask for: namespace shop (log-shipper.sets.outrigger.dev/inject); Deployment shop/tuned (config.outrigger.dev/proxy-image)',
    );
  });

  it('in the policy modes, checks the rights the controller needs to keep the policies', async () => {
    api.objects.set(`/apis/apps/v1/namespaces/${SYSTEM}/deployments/outrigger-controller`, {
      spec: {
        replicas: 1,
        template: {
          spec: {
            containers: [{ args: ['--admission-mode=both', '--policy-owner=my-owner'] }],
          },
        },
      },
      status: { readyReplicas: 1 },
    });
    // Every right is granted but the policies' deletion.
    api.writes.set('POST /apis/authorization.k8s.io/v1/subjectaccessreviews', (body) => {
      const attributes = (body as { spec?: { resourceAttributes?: Record<string, string> } }).spec
        ?.resourceAttributes;
      const denied =
        attributes?.resource === 'mutatingadmissionpolicies' && attributes.verb === 'delete';
      return { body: { status: { allowed: !denied } } };
    });
    const { out } = await outrigger('check');
    expect(out).toContain(
      '× RBAC sufficient: outrigger-controller cannot delete mutatingadmissionpolicies',
    );
    const reviewed = api.requests
      .filter((r) => r.path.endsWith('/subjectaccessreviews'))
      .map((r) => (r.body as { spec: { resourceAttributes: Record<string, string> } }).spec)
      .map((spec) => spec.resourceAttributes);
    expect(reviewed).toContainEqual({
      verb: 'get',
      group: 'rbac.authorization.k8s.io',
      resource: 'clusterroles',
      name: 'my-owner',
    });
    for (const resource of ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'])
      for (const verb of ['list', 'patch', 'delete'])
        expect(reviewed).toContainEqual({
          verb,
          group: 'admissionregistration.k8s.io',
          resource,
        });
  });

  it('fails the leader check for a Lease that expired, or that is not there', async () => {
    const path = `/apis/coordination.k8s.io/v1/namespaces/${SYSTEM}/leases/${LEASE_NAME}`;
    api.objects.set(path, lease(formatMicroTime(Date.now() - 60_000)));
    expect((await outrigger('check')).out).toContain(
      `× controller leader present: Lease ${SYSTEM}/${LEASE_NAME} has no live holder`,
    );
    api.objects.delete(path);
    expect((await outrigger('check')).out).toContain(
      `× controller leader present: no Lease ${SYSTEM}/${LEASE_NAME}`,
    );
  });
});

describe('outrigger status, restart and resume', () => {
  const deployment = {
    metadata: { name: 'web', namespace: 'shop', generation: 1, resourceVersion: '7' },
    spec: {
      replicas: 1,
      template: {
        metadata: {
          labels: { app: 'web', 'outrigger.dev/stamped': 'true' },
          annotations: {
            [OWNER_KIND]: 'Deployment',
            [OWNER_NAME]: 'web',
            'outrigger.dev/config-revision': OLD,
          },
        },
        spec: { containers: [{ name: 'app', image: 'web:1' }] },
      },
    },
    status: {
      observedGeneration: 1,
      replicas: 1,
      updatedReplicas: 1,
      readyReplicas: 1,
      availableReplicas: 1,
    },
  };
  const pod = {
    metadata: {
      name: 'web-pod',
      namespace: 'shop',
      labels: { app: 'web', [REVISION]: OLD },
      annotations: { [OWNER_KIND]: 'Deployment', [OWNER_NAME]: 'web' },
    },
  };

  beforeEach(() => {
    const o = api.objects;
    o.set('/api/v1/namespaces', {
      items: [{ metadata: { name: 'shop', annotations: { [INJECT]: 'enabled' } } }],
    });
    o.set('/apis/apps/v1/deployments', { items: [deployment] });
    o.set('/apis/apps/v1/statefulsets', { items: [] });
    o.set('/apis/apps/v1/daemonsets', { items: [] });
    o.set('/apis/apps/v1/namespaces/shop/deployments/web', deployment);
    o.set('/api/v1/pods', { items: [pod] });
    o.set('/api/v1/namespaces/shop/pods', { items: [pod] });
  });

  it('status lists the workloads of the namespace with their state', async () => {
    const { code, out, err } = await outrigger('status', '-n', 'shop');
    expect({ code, err }).toEqual({ code: 0, err: '' });
    expect(out.split('\n')[1]?.split(/\s{2,}/)).toEqual([
      'shop',
      'Deployment',
      'web',
      '1/1',
      OLD,
      `${OLD}:1`,
      'outdated',
      '-',
    ]);
    expect(out).toContain(`revision ${REVISION_NOW}, mode auto`);
    const selectors = api.requests
      .filter((r) => r.path === '/api/v1/pods')
      .map((r) => r.query.labelSelector);
    expect(selectors.sort()).toEqual(
      [
        REVISION,
        'outrigger.dev/stamped=true,!outrigger.dev/revision,!outrigger.dev/skipped',
      ].sort(),
    );
  });

  it('restart patches the named owner to the current revision, as outrigger-cli', async () => {
    api.writes.set('PATCH /apis/apps/v1/namespaces/shop/deployments/web', () => ({
      body: deployment,
    }));
    const { code, out } = await outrigger('restart', '-n', 'shop', 'deployment/web');
    expect({ code, out }).toEqual({
      code: 0,
      out: `Deployment/web: restarted (rollout) to revision ${REVISION_NOW}\n`,
    });
    const patch = api.requests.find((r) => r.method === 'PATCH');
    expect(patch).toMatchObject({
      contentType: 'application/merge-patch+json',
      query: { fieldManager: 'outrigger-cli' },
      body: {
        spec: {
          template: {
            metadata: { annotations: { 'outrigger.dev/config-revision': REVISION_NOW } },
          },
        },
      },
    });
  });

  it('restart reports an owner the API server refuses to patch, and exits 1', async () => {
    api.writes.set('PATCH /apis/apps/v1/namespaces/shop/deployments/web', () => ({
      status: 403,
      body: { kind: 'Status', message: 'deployments.apps "web" is forbidden' },
    }));
    const { code, err } = await outrigger('restart', '-n', 'shop', 'deployment/web');
    expect({ code, err }).toEqual({
      code: 1,
      err: 'Deployment/web: not restarted: deployments.apps "web" is forbidden\n',
    });
  });

  it('resume annotates the configuration ConfigMap', async () => {
    const path = `/api/v1/namespaces/${SYSTEM}/configmaps/outrigger-config`;
    api.writes.set(`PATCH ${path}`, () => ({ body: {} }));
    const { code, out } = await outrigger('resume');
    expect(code).toBe(0);
    expect(out).toMatch(
      new RegExp(`^asked the controller to resume the wave \\(${RESUME}=\\d{4}-\\d\\d-\\d\\dT`),
    );
    expect(api.requests.find((r) => r.method === 'PATCH')).toMatchObject({
      path,
      contentType: 'application/merge-patch+json',
      query: { fieldManager: 'outrigger-cli' },
      body: { metadata: { annotations: { [RESUME]: expect.stringMatching(/Z$/) } } },
    });
  });

  it("resume SET annotates the ConfigMap with that set's resume; a set not configured is a usage error", async () => {
    const path = `/api/v1/namespaces/${SYSTEM}/configmaps/outrigger-config`;
    const sets =
      'sets:\n  - name: logs\n    containers: [{name: shipper, image: "ghcr.io/acme/shipper:1"}]\n';
    api.objects.set(path, {
      metadata: { name: 'outrigger-config', namespace: SYSTEM },
      data: { 'config.yaml': `${DEFAULT_CONFIG_YAML.replace(/^sets: \[\]\n?/m, '')}\n${sets}` },
    });
    api.writes.set(`PATCH ${path}`, () => ({ body: {} }));
    const resumed = await outrigger('resume', 'logs');
    expect(resumed.code).toBe(0);
    expect(resumed.out).toContain('resume the wave of set logs (logs.sets.outrigger.dev/resume=');
    expect(api.requests.find((r) => r.method === 'PATCH')?.body).toEqual({
      metadata: { annotations: { 'logs.sets.outrigger.dev/resume': expect.stringMatching(/Z$/) } },
    });
    const unknown = await outrigger('resume', 'tracer');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('the configuration has no sidecar set tracer; its sets: logs');
  });

  it('gives the API server message, and exits 1, when the ConfigMap is missing', async () => {
    api.objects.delete(`/api/v1/namespaces/${SYSTEM}/configmaps/outrigger-config`);
    const { code, err } = await outrigger('status');
    expect({ code, err }).toEqual({ code: 1, err: 'error: outrigger-config not found\n' });
  });
});

describe('the cluster flags', () => {
  it('exit 2 for a context the kubeconfig does not have', async () => {
    const { code, err } = await outrigger('status', '--context', 'elsewhere');
    expect(code).toBe(2);
    expect(err).toBe(
      'error: --context elsewhere: no such context in the kubeconfig (kubectl config get-contexts lists them)\n',
    );
  });

  it('exit 2 for a --config-map that is not NAMESPACE/NAME', async () => {
    const { code, err } = await outrigger('status', '--config-map', 'just-a-name');
    expect(code).toBe(2);
    expect(err).toMatch(/^error: --config-map must be NAMESPACE\/NAME, such as /);
    expect(api.requests).toEqual([]);
  });
});
