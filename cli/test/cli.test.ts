import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_CONFIG_YAML } from '@outrigger/shared';
import { CORPUS_DIR, corpusFiles, describeWithCorpus, freePort } from '@outrigger/testkit';
import { run } from '../src/main';
import type { Io } from '../src/io';

const BIN = join(__dirname, '..', 'bin', 'outrigger.js');

function fakeIo(files: Record<string, string>, stdin = ''): Io & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    readFile: (path: string) => {
      const text = files[path];
      if (text === undefined)
        return Promise.reject(
          Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), {
            code: 'ENOENT',
          }),
        );
      return Promise.resolve(text);
    },
    readStdin: () => Promise.resolve(stdin),
    stdout: (t: string) => void (io.out += t),
    stderr: (t: string) => void (io.err += t),
  };
  return io;
}

const POD =
  'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n    - name: app\n      image: nginx\n';
const SERVICE =
  'apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n    - port: 80\n';

describe('outrigger inject', () => {
  it('injects, passes the rest through, keeps order, and reports one line per object', async () => {
    const io = fakeIo({ 'a.yaml': `${SERVICE}---\n${POD}` });
    expect(await run(['inject', '-f', 'a.yaml'], io)).toBe(0);
    expect(io.err).toBe('Service/web: unchanged (not a workload)\nPod/web: injected\n');
    const docs = parseAllDocuments(io.out).map(
      (d) => d.toJS() as { kind: string; spec: { initContainers?: { name: string }[] } },
    );
    expect(docs.map((d) => d.kind)).toEqual(['Service', 'Pod']);
    expect(docs[1]?.spec.initContainers?.map((c) => c.name)).toEqual([
      'outrigger-init',
      'outrigger-proxy',
    ]);
  });

  it('reads stdin with -f - and several files in order', async () => {
    const io = fakeIo({ 'svc.yaml': SERVICE }, POD);
    expect(await run(['inject', '-f', '-', '-f', 'svc.yaml'], io)).toBe(0);
    expect(parseAllDocuments(io.out).map((d) => (d.toJS() as { kind: string }).kind)).toEqual([
      'Pod',
      'Service',
    ]);
  });

  it('uses --config, and honours --native-sidecars unsupported', async () => {
    const io = fakeIo({ 'p.yaml': POD, 'c.yaml': 'proxy:\n  name: mesh-proxy\n' });
    expect(
      await run(
        ['inject', '-f', 'p.yaml', '--config', 'c.yaml', '--native-sidecars', 'unsupported'],
        io,
      ),
    ).toBe(0);
    const pod = parseAllDocuments(io.out)[0]?.toJS() as {
      spec: { containers: { name: string }[] };
    };
    expect(pod.spec.containers.map((c) => c.name)).toEqual(['mesh-proxy', 'app']);
  });

  it('exits 1 with the file, document and line for input that does not parse', async () => {
    const io = fakeIo({ 'bad.yaml': `${POD}---\nkind: Pod\nmetadata:\n  name: x\n   oops: 1\n` });
    expect(await run(['inject', '-f', 'bad.yaml'], io)).toBe(1);
    expect(io.err).toMatch(/^error: bad\.yaml: document 2, line 12: /m);
    expect(io.out).toBe('');
  });

  it('exits 1 naming the file and document for an alias to no anchor, not with a stack trace', async () => {
    const io = fakeIo({ 'a.yaml': `${POD}---\nkind: Pod\nmetadata:\n  name: *nope\n` });
    expect(await run(['inject', '-f', 'a.yaml'], io)).toBe(1);
    expect(io.err).toMatch(/^error: a\.yaml: document 2: .*alias.*\*nope/m);
    expect(io.err).not.toMatch(/\n\s+at /);
  });

  it('exits 1 for a missing file or an invalid configuration, 2 for bad usage', async () => {
    expect(await run(['inject', '-f', 'nope.yaml'], fakeIo({}))).toBe(1);
    const io = fakeIo({ 'p.yaml': POD, 'c.yaml': 'proxy:\n  uid: -1\n' });
    expect(await run(['inject', '-f', 'p.yaml', '--config', 'c.yaml'], io)).toBe(1);
    expect(io.err).toMatch(/invalid c\.yaml:\n {2}\.proxy\.uid \(line 2\): must be an integer/);
    expect(await run(['inject'], fakeIo({}))).toBe(2);
    expect(await run(['inject', '--bogus'], fakeIo({}))).toBe(2);
    expect(await run(['frobnicate'], fakeIo({}))).toBe(2);
  });
});

describe('outrigger config', () => {
  it('prints the default configuration, which validates', async () => {
    const io = fakeIo({});
    expect(await run(['config', 'default'], io)).toBe(0);
    expect(io.out).toBe(DEFAULT_CONFIG_YAML);
    const v = fakeIo({ 'd.yaml': io.out });
    expect(await run(['config', 'validate', 'd.yaml'], v)).toBe(0);
    expect(v.out).toMatch(/^d\.yaml: valid \(revision [0-9a-f]{10}\)\n$/);
  });

  it('lists every error by path and exits 1', async () => {
    const io = fakeIo({ 'c.yaml': 'nativeSidecar: maybe\nrollout:\n  maxConcurrent: 0\n' });
    expect(await run(['config', 'validate', 'c.yaml'], io)).toBe(1);
    expect(io.err).toBe(
      'c.yaml: invalid configuration, 2 error(s):\n' +
        '  .nativeSidecar (line 1): must be one of auto, true, false; got string "maybe"\n' +
        '  .rollout.maxConcurrent (line 3): must be an integer from 1 to 1000; got number 0\n',
    );
  });
});

const exec = promisify(execFile);

describeWithCorpus('the outrigger binary over the corpus', () => {
  const files = corpusFiles().map((f) => join(CORPUS_DIR, f));

  it('injects every parseable corpus file with exit 0 in one run', async () => {
    const good = files.filter((f) => !f.endsWith('.bad.input.yml'));
    const args = good.flatMap((f) => ['-f', f]);
    const { stdout, stderr } = await exec(process.execPath, [BIN, 'inject', ...args], {
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(stderr).toMatch(/Deployment\/hello: injected/);
    expect(stderr).toMatch(/DeploymentConfig\/hello: unchanged \(not a workload\)/);
    expect(stderr).not.toMatch(/^error/m);
    expect(parseAllDocuments(stdout).every((d) => d.errors.length === 0)).toBe(true);
  });

  it('exits 1 on the corpus file that is broken YAML on purpose', async () => {
    const bad = files.find((f) => f.endsWith('.bad.input.yml')) ?? '';
    await expect(exec(process.execPath, [BIN, 'inject', '-f', bad])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(
        /document 2, line 36: All mapping items must start at the same column/,
      ),
    });
  });
});

describe('a kubeconfig that does not work', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-cli-'));
  const kubeconfig = (name: string, text: string): string => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };
  const head = 'apiVersion: v1\nkind: Config\n';
  const context =
    'users: [{name: u, user: {token: abc}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n';
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    [
      'does not parse',
      'garbage',
      'this: is: not: yaml: [',
      /garbage\.yaml: .*; point --kubeconfig or KUBECONFIG/,
    ],
    ['has no current cluster', 'empty', head, /empty\.yaml: .*no current cluster/i],
    [
      'names a cluster without a server',
      'noserver',
      `${head}clusters: [{name: c, cluster: {}}]\n${context}`,
      /noserver\.yaml: .*server/,
    ],
    [
      'names a server that refuses connections',
      'refused',
      `${head}clusters: [{name: c, cluster: {server: "https://127.0.0.1:REFUSING_PORT", insecure-skip-tls-verify: true}}]\n${context}`,
      /cannot reach the API server: .*ECONNREFUSED/,
    ],
  ])('%s: exits 1 with a message, not a stack trace', async (_what, name, text, message) => {
    const file = kubeconfig(
      `${name}.yaml`,
      text.replace('REFUSING_PORT', String(await freePort())),
    );
    const io = fakeIo({});
    expect(await run(['status', '-n', 'shop', '--kubeconfig', file], io)).toBe(1);
    expect(io.err).toMatch(/^error: /);
    expect(io.err).toMatch(message);
    expect(io.err).not.toMatch(/\n\s+at /);
  });
});

describe('usage', () => {
  it('prints the usage on stdout and exits 0 when asked for it', async () => {
    for (const ask of ['--help', '-h', 'help']) {
      const io = fakeIo({});
      expect(await run([ask], io)).toBe(0);
      expect(io.out).toContain('Usage: outrigger status');
      expect(io.err).toBe('');
    }
  });

  it('exits 2 with the usage on stderr without a command, or with an unknown one', async () => {
    for (const argv of [[], ['deploy']]) {
      const io = fakeIo({});
      expect(await run(argv, io)).toBe(2);
      expect(io.out).toBe('');
      expect(io.err).toContain('Usage: outrigger status');
    }
  });

  it('answers as a kubectl plugin by the name kubectl-outrigger', async () => {
    const plugin = join(__dirname, '..', 'bin', 'kubectl-outrigger');
    const { stdout } = await exec(plugin, ['--help']);
    expect(stdout).toContain('Usage: outrigger status');
  });
});
