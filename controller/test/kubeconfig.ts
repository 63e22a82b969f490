// A kubeconfig for tests that need a real client but no API server.

import { KubeConfig } from '@kubernetes/client-node';

/** A kubeconfig whose server refuses connections, as an API server that is down does. */
export function unreachable(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'http://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}
