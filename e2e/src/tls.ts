// Throwaway TLS material for servers the API server calls (webhooks), written under the run's
// log folder so a failed run keeps it beside its logs.

import { mkdtempSync } from 'node:fs';
import * as path from 'node:path';
import {
  makeServingCert as make,
  type ServingCert,
  type ServingCertOptions,
} from '@outrigger/testkit';
import { logDir } from './log-dir';

export type { ServingCert, ServingCertOptions };

/** A CA and a serving certificate for `hosts` signed by it, in a new folder under tls/. */
export function makeServingCert(options: ServingCertOptions = {}): Promise<ServingCert> {
  const dir = options.dir ?? mkdtempSync(path.join(logDir('tls'), 'cert-'));
  return Promise.resolve(make({ ...options, dir }));
}
