// The Helm chart and the plain install YAML rendered from it: helm lint
// is clean, manifests/install.yaml is what the chart renders with its defaults, the API server
// accepts every object in it (a server-side dry run), and every argument the chart gives the
// two binaries is one they accept, in each profile and certificate mode.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { SYSTEM_NAMESPACE } from '@outrigger/shared';
import {
  buildWorkspace,
  connect,
  deleteNamespace,
  kubeconfigPath,
  parseManifests,
  repoRoot,
  toolBin,
  type Cluster,
  type Manifest,
  CHART_DIR,
  helm,
} from '../src';

const run = promisify(execFile);
const KUBECTL = toolBin('kubectl');
const CHART = CHART_DIR;
const INSTALL_YAML = path.join(repoRoot, 'manifests', 'install.yaml');

const cluster: Cluster = connect();
let createdSystemNamespace = false;

afterAll(async () => {
  if (createdSystemNamespace) await deleteNamespace(cluster, SYSTEM_NAMESPACE);
  await cluster.close();
});

const template = (...sets: string[]) =>
  helm(
    'template',
    'outrigger',
    CHART,
    '--namespace',
    SYSTEM_NAMESPACE,
    ...sets.flatMap((s) => ['--set', s]),
  );

interface Container {
  name: string;
  command?: string[];
  args?: string[];
}

function containers(objects: Manifest[]): Container[] {
  return objects
    .filter((o) => o.kind === 'Deployment')
    .flatMap((o) => {
      const spec = (o as { spec?: { template?: { spec?: { containers?: Container[] } } } }).spec;
      return spec?.template?.spec?.containers ?? [];
    });
}

/** Parses the arguments with the binary's own flag parser (from its build): the error, if any. */
async function flagError(command: string, args: string[]): Promise<string | undefined> {
  const workspace = command === 'outrigger-webhook' ? 'webhook' : 'controller';
  const flags = path.join(repoRoot, workspace, 'dist', 'src', 'flags.js');
  const script = `try { require(${JSON.stringify(flags)}).parseFlags(JSON.parse(process.argv[1])); } catch (e) { process.stdout.write(e.message); }`;
  const { stdout } = await run(process.execPath, ['-e', script, JSON.stringify(args)]);
  return stdout === '' ? undefined : stdout;
}

describe('the Helm chart and manifests/install.yaml', () => {
  it('passes helm lint --strict', async () => {
    expect(await helm('lint', CHART, '--strict')).toContain('0 chart(s) failed');
  });

  it('renders manifests/install.yaml exactly (run make manifests after changing the chart)', async () => {
    const rendered = await template('namespace.create=true');
    const file = readFileSync(INSTALL_YAML, 'utf8');
    // The file is the rendering behind a two-line header.
    expect(file.split('\n').slice(2).join('\n')).toBe(rendered);
  });

  it('is accepted by the API server: kubectl apply --dry-run=server -f manifests/install.yaml', async () => {
    // A dry run creates nothing, so the namespaced objects need their namespace to exist.
    try {
      await cluster.core.readNamespace({ name: SYSTEM_NAMESPACE });
    } catch {
      await cluster.core.createNamespace({ body: { metadata: { name: SYSTEM_NAMESPACE } } });
      createdSystemNamespace = true;
    }
    const { stdout } = await run(KUBECTL, ['apply', '--dry-run=server', '-f', INSTALL_YAML], {
      env: { ...process.env, KUBECONFIG: kubeconfigPath() },
    });
    const objects = parseManifests(readFileSync(INSTALL_YAML, 'utf8'));
    expect(stdout.trim().split('\n')).toHaveLength(objects.length);
    expect(stdout).toContain('mutatingwebhookconfiguration.admissionregistration.k8s.io/outrigger');
  });

  it.each([
    ['the defaults', []],
    ['the HA profile with cert-manager', ['profile=ha', 'certificates.mode=cert-manager']],
    [
      'a webhook outside the cluster',
      ['webhook.url=https://127.0.0.1:8443', 'excludeNamespaces={a,b}'],
    ],
  ])('gives the binaries only flags they accept: %s', async (_name, sets) => {
    await Promise.all([buildWorkspace('webhook'), buildWorkspace('controller')]);
    const found = containers(parseManifests(await template(...sets)));
    expect(found.map((c) => c.command?.[0]).sort()).toEqual([
      'outrigger-controller',
      'outrigger-webhook',
    ]);
    for (const c of found)
      expect({
        container: c.name,
        error: await flagError(c.command?.[0] ?? '', c.args ?? []),
      }).toEqual({
        container: c.name,
        error: undefined,
      });
  });

  it('renders a caBundle only in external mode, where the controller does not keep one', async () => {
    const bundles = (objects: Manifest[]) =>
      objects
        .filter((o) => o.kind === 'MutatingWebhookConfiguration')
        .flatMap(
          (o) => (o as { webhooks?: { clientConfig: { caBundle?: string } }[] }).webhooks ?? [],
        )
        .map((w) => w.clientConfig.caBundle);
    expect(bundles(parseManifests(await template()))).toEqual([undefined, undefined, undefined]);
    const external = await template('certificates.mode=external', 'certificates.caBundle=Q0E=');
    expect(bundles(parseManifests(external))).toEqual(['Q0E=', 'Q0E=', 'Q0E=']);
    await expect(template('certificates.mode=external')).rejects.toThrow(
      /needs certificates.caBundle/,
    );
    await expect(template('certificates.mode=selfmanaged')).rejects.toThrow(
      /certificates.mode must be/,
    );
  });

  it('refuses admission.mode=policy where the server serves no MutatingAdmissionPolicy, and renders it where it does', async () => {
    await expect(template('admission.mode=policy')).rejects.toThrow(
      /admission.mode=policy needs an API server that serves MutatingAdmissionPolicy: Kubernetes 1.36 .*--feature-gates=MutatingAdmissionPolicy=true/,
    );
    await expect(template('admission.mode=webhooks')).rejects.toThrow(
      /admission.mode must be webhook, policy or both/,
    );
    const served = await helm(
      'template',
      'outrigger',
      CHART,
      '--namespace',
      SYSTEM_NAMESPACE,
      '--api-versions',
      'admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy',
      '--set',
      'admission.mode=policy',
    );
    const objects = parseManifests(served);
    const controller = containers(objects).find((c) => c.command?.[0] === 'outrigger-controller');
    expect(controller?.args).toEqual(
      expect.arrayContaining([
        '--admission-mode=policy',
        '--policy-api-version=admissionregistration.k8s.io/v1beta1',
      ]),
    );
    await buildWorkspace('controller');
    expect(await flagError('outrigger-controller', controller?.args ?? [])).toBeUndefined();
    // The pod entries go: the policies inject; the workload entry stays for the stamp in flight.
    const webhooks = objects.find((o) => o.kind === 'MutatingWebhookConfiguration') as unknown as {
      webhooks: { name: string }[];
    };
    expect(webhooks.webhooks.map((w) => w.name)).toEqual(['workloads.outrigger.dev']);
  });

  it("sets the controller's heap ceiling from controller.heapLimitMiB, and refuses one that is no size", async () => {
    expect(await template('controller.heapLimitMiB=300')).toContain('--max-old-space-size=300 ');
    await expect(template('controller.heapLimitMiB=160Mi')).rejects.toThrow(
      /controller.heapLimitMiB must be a whole number of MiB/,
    );
    await expect(template('controller.heapLimitMiB=0')).rejects.toThrow(
      /controller.heapLimitMiB must be/,
    );
  });

  it('runs both components as the restricted Pod Security Standard asks', () => {
    const objects = parseManifests(readFileSync(INSTALL_YAML, 'utf8'));
    const ns = objects.find((o) => o.kind === 'Namespace');
    expect(ns?.metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    for (const c of containers(objects) as (Container & { securityContext?: unknown })[])
      expect(c.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      });
  });
});
