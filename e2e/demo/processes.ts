// make demo where the local cluster has no real node (kwok's fake nodes run no containers):
// the chart is applied without its Deployments, rendered with the webhook called by URL and its
// certificate given (certificates.mode=external), and the two components run on this machine as
// processes, each as its own ServiceAccount, detached so they outlive the demo (make demo-down).

import { spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  CONFIG_MAP_NAME,
  CONTROLLER_SERVICE_ACCOUNT,
  SYSTEM_NAMESPACE,
  WEBHOOK_SERVICE_ACCOUNT,
} from '@outrigger/shared';
import {
  CHART_DIR,
  apply,
  done,
  freePort,
  helm,
  makeServingCert,
  outriggerCacheDir,
  parseManifests,
  pending,
  repoRoot,
  waitFor,
  writeServiceAccountKubeConfig,
  type Cluster,
} from '../src';
import { DEMO_VALUES } from './chart';
import { say } from './narration';

export const demoDir = path.join(outriggerCacheDir(), 'demo');
const PROCESSES = ['outrigger-webhook', 'outrigger-controller'];

/** The chart rendered for processes outside the cluster: the webhook by URL, with our CA. */
async function render(url: string, caBundle: string): Promise<string> {
  // prettier-ignore
  return helm(
    'template', 'outrigger', CHART_DIR,
    '--namespace', SYSTEM_NAMESPACE,
    '--set', 'namespace.create=true',
    '--set', `webhook.url=${url}`,
    '--set', 'certificates.mode=external',
    '--set', `certificates.caBundle=${caBundle}`,
    '--set', 'rollout.maxConcurrent=2',
    ...DEMO_VALUES.flatMap((v) => ['--set', v]),
  );
}

/** Starts a binary detached, so it outlives the demo; its pid goes where demo-down finds it. */
function startDetached(name: string, args: string[], kubeconfig: string): number {
  mkdirSync(demoDir, { recursive: true });
  const log = path.join(demoDir, `${name}.log`);
  const out = openSync(log, 'w');
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  child.unref();
  writeFileSync(path.join(demoDir, `${name}.pid`), `${child.pid ?? ''}\n`);
  return child.pid ?? 0;
}

async function waitReady(url: string, what: string): Promise<void> {
  await waitFor(
    what,
    async () => {
      try {
        const response = await fetch(url);
        return response.ok ? done(undefined) : pending(response.status);
      } catch (error) {
        return pending(String(error));
      }
    },
    { timeoutMs: 60_000 },
  );
}

/** An earlier demo's processes go first, so every run starts the same. */
export function stopDemoProcesses(): void {
  for (const name of PROCESSES) {
    try {
      const pid = Number(readFileSync(path.join(demoDir, `${name}.pid`), 'utf8'));
      // Never 0 or negative: those signal a whole process group, this one included.
      if (Number.isInteger(pid) && pid > 0) process.kill(pid);
    } catch {
      // not running
    }
  }
}

export async function installAsProcesses(cluster: Cluster): Promise<void> {
  const [port, webhookMetrics, controllerMetrics] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
  ]);
  mkdirSync(path.join(demoDir, 'tls'), { recursive: true });
  const cert = await makeServingCert({
    hosts: ['127.0.0.1'],
    dir: path.join(demoDir, 'tls'),
    days: 30,
  });
  const objects = parseManifests(await render(`https://127.0.0.1:${port}`, cert.caBundle));
  const kept = objects.filter((o) => o.kind !== 'Deployment' && o.kind !== 'PodDisruptionBudget');
  await apply(cluster, kept);
  say(
    `Installed ${kept.length} objects from the chart (${objects.length - kept.length} Deployments left out: kwok runs no images).`,
  );
  const account = async (name: string) =>
    (
      await writeServiceAccountKubeConfig(
        cluster,
        { namespace: SYSTEM_NAMESPACE, name },
        { expirationSeconds: 86_400 },
      )
    ).path;
  const [webhookKc, controllerKc] = await Promise.all([
    account(WEBHOOK_SERVICE_ACCOUNT),
    account(CONTROLLER_SERVICE_ACCOUNT),
  ]);
  // prettier-ignore
  const webhookPid = startDetached('outrigger-webhook', [
    path.join(repoRoot, 'webhook', 'bin', 'outrigger-webhook.js'),
    '--listen', `127.0.0.1:${port}`, '--metrics-listen', `127.0.0.1:${webhookMetrics}`,
    '--tls-cert-file', cert.certFile, '--tls-key-file', cert.keyFile,
    '--config-map', `${SYSTEM_NAMESPACE}/${CONFIG_MAP_NAME}`, '--kubeconfig', webhookKc,
    '--shutdown-delay-seconds', '0',
  ], webhookKc);
  // prettier-ignore
  const controllerPid = startDetached('outrigger-controller', [
    path.join(repoRoot, 'controller', 'bin', 'outrigger-controller.js'),
    '--metrics-listen', `127.0.0.1:${controllerMetrics}`, '--kubeconfig', controllerKc,
    '--webhook-ready-url', `http://127.0.0.1:${webhookMetrics}/readyz`,
  ], controllerKc);
  await waitReady(`http://127.0.0.1:${webhookMetrics}/readyz`, 'the webhook to be ready');
  await waitReady(`http://127.0.0.1:${controllerMetrics}/readyz`, 'the controller to be ready');
  say(
    `outrigger-webhook (pid ${webhookPid}) and outrigger-controller (pid ${controllerPid}) run here as their own ServiceAccounts; logs in ${demoDir}.`,
  );
}
