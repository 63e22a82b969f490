// The operating commands against a real cluster: `outrigger check` passes on a healthy
// install and fails, with its hint, on a stopped webhook, a wrong caBundle and an invalid
// configuration; `outrigger status` reports each workload's state as the controller decides
// it, `outrigger restart` restarts due owners in manual mode, and `outrigger resume` asks the
// controller to resume a stopped wave. The CLI runs as the admin, the components as their own
// ServiceAccounts.

import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  RESUME,
  REVISION,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import {
  apply,
  connect,
  deploymentYaml,
  done,
  cliFlags,
  makeServingCert,
  outriggerCli,
  pending,
  repoRoot,
  TestInstall,
  toolBin,
  waitFor,
  waitForRollout,
  type Cluster,
  useTestInstall,
} from '../src';

const run = promisify(execFile);

const configYaml = (step: number) =>
  `proxy:\n  env:\n    - name: E2E_STEP\n      value: "${step}"\nrollout:\n  mode: manual\n`;
const revisionOf = (yaml: string) => makeSnapshot(mustParseConfig(yaml)).revision;

const cluster: Cluster = connect();
const install = new TestInstall(cluster, { configYaml: configYaml(0) });
let ns = '';
/** Not opted in: the check's dry-run pod opts in by its own label here. */
let probeNs = '';

useTestInstall(install, { build: ['webhook', 'controller', 'cli'], then: start });

async function start(): Promise<void> {
  await install.startController();
  ns = await install.newNamespace('operate', { optedIn: true });
  probeNs = await install.newNamespace('check-probe');
  await waitFor('the controller to label the namespace', async () => {
    const n = await cluster.core.readNamespace({ name: ns });
    return n.metadata?.labels?.['outrigger.dev/injection']
      ? done(undefined)
      : pending(n.metadata?.labels);
  });
  // minReadySeconds: each rollout lasts a few seconds, long enough to see it rolling.
  const yaml = ['a', 'b'].map((n) => deploymentYaml(n, { spec: { minReadySeconds: 3 } }));
  await apply(cluster, yaml.join('---\n'), { namespace: ns });
  await waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: 'a' });
  await waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: 'b' });
}

const outrigger = (...args: string[]) => outriggerCli(install, ...args);

interface Row {
  name: string;
  state: string;
  revision?: string;
  injected: number;
  pods: number;
  reason: string;
}

async function rows(): Promise<Row[]> {
  const { code, stdout, stderr } = await outrigger('status', '-n', ns, '-o', 'json');
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  return (JSON.parse(stdout) as { rows: Row[] }).rows;
}

const stateOf = async (name: string) => (await rows()).find((r) => r.name === name);

interface CheckLine {
  ok: boolean;
  name: string;
  detail: string;
  hint?: string;
}

/** Runs `outrigger check` and reads its lines: "√ name: detail" or "× name: detail", then a hint. */
async function check(): Promise<{ code: number; lines: CheckLine[]; stdout: string }> {
  const r = await outrigger(
    'check',
    '--probe-namespace',
    probeNs,
    '--webhook-configuration',
    install.webhookConfigurationName,
  );
  const lines: CheckLine[] = [];
  for (const line of r.stdout.split('\n')) {
    const m = /^([√×]) ([^:]+): (.*)$/.exec(line);
    if (m) lines.push({ ok: m[1] === '√', name: m[2] ?? '', detail: m[3] ?? '' });
    const hint = /^ {4}hint: (.*)$/.exec(line);
    const last = lines.at(-1);
    if (hint && last) last.hint = hint[1];
  }
  return { code: r.code, lines, stdout: r.stdout };
}

const failing = (lines: CheckLine[]) => lines.filter((l) => !l.ok).map((l) => l.name);

describe('outrigger check', () => {
  it('passes every check on a healthy install', async () => {
    const { code, lines, stdout } = await check();
    expect({ code, failing: failing(lines), stdout }).toEqual({ code: 0, failing: [], stdout });
    expect(lines.map((l) => l.name)).toEqual([
      'API server reachable, version supported',
      'configuration valid',
      'webhook configuration present',
      'components ready',
      'controller leader present',
      'RBAC sufficient',
      'serving certificate trusted and current',
      'admission policies in force',
      'webhook answering',
    ]);
  });

  it('fails with a hint when the webhook is stopped', async () => {
    await install.stopWebhook();
    try {
      const { code, lines } = await check();
      expect(code).toBe(1);
      expect(failing(lines)).toEqual([
        'serving certificate trusted and current',
        'webhook answering',
      ]);
      expect(lines.find((l) => l.name.startsWith('serving'))?.hint).toContain(
        'the webhook is not running',
      );
    } finally {
      await install.resumeWebhook();
    }
  });

  it('fails with a hint when the caBundle does not verify the serving certificate', async () => {
    const name = install.webhookConfigurationName;
    const admission = cluster.admission;
    const original = await admission.readMutatingWebhookConfiguration({ name });
    const other = await makeServingCert({ hosts: ['127.0.0.1'] });
    const wrong = (original.webhooks ?? []).map((w) => ({
      ...w,
      clientConfig: { ...w.clientConfig, caBundle: other.caBundle },
    }));
    await admission.replaceMutatingWebhookConfiguration({
      name,
      body: { ...original, webhooks: wrong },
    });
    try {
      const { code, lines } = await check();
      expect(code).toBe(1);
      const cert = lines.find((l) => l.name.startsWith('serving'));
      expect(cert).toMatchObject({ ok: false, detail: expect.stringContaining('does not verify') });
      expect(cert?.hint).toContain('the CA that signed the serving certificate');
    } finally {
      const current = await admission.readMutatingWebhookConfiguration({ name });
      await admission.replaceMutatingWebhookConfiguration({
        name,
        body: { ...current, webhooks: original.webhooks },
      });
    }
  });

  it('fails with a hint, naming the field, when the configuration is invalid', async () => {
    await install.setConfig('rollout:\n  maxConcurrent: 0\n');
    try {
      const { code, lines } = await check();
      expect(code).toBe(1);
      const config = lines.find((l) => l.name === 'configuration valid');
      expect(config).toMatchObject({
        ok: false,
        detail: expect.stringContaining('.rollout.maxConcurrent'),
      });
      expect(config?.hint).toContain('outrigger config validate');
    } finally {
      await install.setConfig(configYaml(0));
    }
  });
});

describe('a ConfigMap without the config.yaml key', () => {
  it('is an error for status, restart and check, not the default configuration', async () => {
    // Read as the defaults, it had restart move owners to a revision nobody chose.
    await install.setConfigData({ 'config.yml': configYaml(0) });
    try {
      for (const args of [['status'], ['restart']]) {
        const r = await outrigger(...args, '-n', ns);
        expect(r.code).toBe(1);
        expect(r.stderr).toContain('has no key config.yaml; put the injector configuration there');
      }
      const { code, lines } = await check();
      expect(code).toBe(1);
      expect(lines.find((l) => l.name === 'configuration valid')).toMatchObject({
        ok: false,
        detail: expect.stringContaining('has no key config.yaml'),
      });
    } finally {
      await install.setConfigData({ [CONFIG_MAP_KEY]: configYaml(0) });
    }
  });
});

describe('outrigger status, restart and resume', () => {
  it('reports every workload current and injected after the webhook stamped them', async () => {
    const revision = revisionOf(configYaml(0));
    await waitFor('both pods injected', async () => {
      const r = await rows();
      return r.every((x) => x.injected === 1 && x.pods === 1) && r.length === 2
        ? done(r)
        : pending(r);
    });
    expect(await rows()).toEqual([
      expect.objectContaining({ name: 'a', state: 'current', revision }),
      expect.objectContaining({ name: 'b', state: 'current', revision }),
    ]);
    const table = await outrigger('status', '-n', ns);
    expect(table.stdout).toMatch(
      /NAMESPACE\s+KIND\s+NAME\s+INJECTED\s+PINNED\s+RUNNING\s+STATE\s+GATE/,
    );
    expect(table.stdout).toContain(`mode manual`);
  });

  it('answers as `kubectl outrigger status` with kubectl-outrigger on the PATH', async () => {
    const PATH = [
      path.join(repoRoot, 'cli', 'bin'),
      path.dirname(process.execPath),
      process.env.PATH,
    ];
    const { stdout } = await run(
      toolBin('kubectl'),
      ['outrigger', 'status', '-n', ns, '-o', 'json', ...cliFlags(install)],
      { env: { ...process.env, PATH: PATH.join(path.delimiter) } },
    );
    expect(JSON.parse(stdout)).toEqual(
      JSON.parse((await outrigger('status', '-n', ns, '-o', 'json')).stdout),
    );
  });

  it('in manual mode, a new revision leaves owners outdated until outrigger restart restarts them', async () => {
    const yaml = configYaml(1);
    const revision = revisionOf(yaml);
    await install.setConfig(yaml);
    await waitFor('both owners reported outdated, held by manual mode', async () => {
      const r = await rows();
      return r.every((x) => x.state === 'outdated' && x.reason === 'manual-mode')
        ? done(r)
        : pending(r);
    });

    const one = await outrigger('restart', '-n', ns, 'deployment/a');
    expect(one).toMatchObject({
      code: 0,
      stdout: `Deployment/a: restarted (rollout) to revision ${revision}\n`,
    });
    await waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: 'a' });
    await waitFor('a current at the new revision, b still outdated', async () => {
      const [a, b] = [await stateOf('a'), await stateOf('b')];
      return a?.state === 'current' && a.revision === revision && b?.state === 'outdated'
        ? done(undefined)
        : pending({ a, b });
    });

    const rest = await outrigger('restart', '-n', ns);
    expect(rest.stdout).toBe(`Deployment/b: restarted (rollout) to revision ${revision}\n`);
    await waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: 'b' });
    await waitFor('every pod on the new revision', async () => {
      const { items } = await cluster.core.listNamespacedPod({ namespace: ns });
      const live = items.filter((p) => !p.metadata?.deletionTimestamp);
      return live.length === 2 && live.every((p) => p.metadata?.labels?.[REVISION] === revision)
        ? done(undefined)
        : pending(live.map((p) => p.metadata?.labels?.[REVISION]));
    });
    expect((await outrigger('restart', '-n', ns, 'deployment/a')).stdout).toBe(
      'Deployment/a: current, nothing to restart\n',
    );
  });

  it('names what it cannot find, with the form to use', async () => {
    const bad = await outrigger('restart', '-n', ns, 'deployment/nope');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      'deployment/nope: no such workload in scope; name it as KIND/NAME',
    );
  });

  it('outrigger resume asks the controller to resume the wave', async () => {
    const { code, stdout } = await outrigger('resume');
    expect(code).toBe(0);
    expect(stdout).toContain(`${RESUME}=`);
    const cm = await cluster.core.readNamespacedConfigMap({
      namespace: install.system,
      name: CONFIG_MAP_NAME,
    });
    expect(cm.metadata?.annotations?.[RESUME]).toMatch(/^\d{4}-\d\d-\d\dT/);
  });
});
