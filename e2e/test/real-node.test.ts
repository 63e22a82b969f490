// The local cluster's real node and the machine it runs on (e2e/cluster/node.sh): what it
// changes is seen by the record down.sh compares against (so "the machine is as it was" after
// make cluster-down means something), and no packet for the cluster's ranges leaves the machine.

import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { clusterScriptsDir, isLocalCluster, localClusterStateDir, outriggerCacheDir } from '../src';

const run = promisify(execFile);

const stateDir = process.env.OUTRIGGER_E2E_LOCAL_STATE_DIR ?? localClusterStateDir();
const hasRealNode = isLocalCluster() && existsSync(path.join(stateDir, 'node', '.on'));
const describeNode = hasRealNode ? describe : describe.skip;
if (!hasRealNode) {
  process.stderr.write('[e2e] real-node suite skipped: the local cluster has no real node\n');
}

describeNode('the real node on this machine', () => {
  it('changes the machine in ways the before-and-after record sees', async () => {
    // where node.sh keeps the record made before the node touched the machine
    const { stdout: sum } = await run('bash', ['-c', `printf '%s' "$1" | cksum`, '_', stateDir]);
    const before = path.join(outriggerCacheDir(), 'host-state', `${sum.split(' ')[0]}.before`);
    expect(existsSync(before)).toBe(true);
    const { stdout: now } = await run('bash', [path.join(clusterScriptsDir, 'host-state.sh')], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const was = new Set(readFileSync(before, 'utf8').split('\n'));
    const added = now.split('\n').filter((line) => line && !was.has(line));
    // the bridge, the guard chain, kube-proxy's chains, the kubelet's cgroups, containerd
    expect(added).toEqual(
      expect.arrayContaining([
        'link outrigger0',
        expect.stringMatching(/^iptables :OUTRIGGER-GUARD /),
        expect.stringMatching(/^iptables :KUBE-SERVICES /),
        expect.stringMatching(/^cgroup \/sys\/fs\/cgroup\/[a-z]+\/kubepods$/),
        expect.stringMatching(/^process \/usr\/bin\/containerd --config /),
      ]),
    );
  });

  it('rejects, on this machine, a packet for a Service address no Service has', async () => {
    // Without the guard it would leave by the default route, where an egress proxy may answer.
    const started = Date.now();
    const error = await run('curl', ['-s', '--max-time', '5', 'http://10.96.255.254/']).then(
      () => undefined,
      (e: { code?: number }) => e,
    );
    expect(error?.code).toBe(7); // curl: could not connect (refused by the REJECT rule)
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
