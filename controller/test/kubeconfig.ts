// An API client for tests that need a real client but no API server.

import { KubeApi } from '@outrigger/kube';

/** A client whose server refuses connections, as an API server that is down does. */
export function unreachable(): KubeApi {
  return new KubeApi({ server: 'http://127.0.0.1:1' });
}
