// The pinned versions of the local control plane, read from e2e/cluster/versions.env.

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { clusterScriptsDir, outriggerCacheDir } from './paths';

export interface PinnedVersions {
  /** Such as v1.34.4: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl. */
  kubernetes: string;
  etcd: string;
  kwok: string;
  helm: string;
}

export function readPinnedVersions(
  file: string = path.join(clusterScriptsDir, 'versions.env'),
): PinnedVersions {
  const values = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const match = /^\s*([A-Z_]+)=["']?([^"'\s#]*)["']?/.exec(line);
    if (match?.[1] && match[2] !== undefined) values.set(match[1], match[2]);
  }
  const get = (key: string): string => {
    const value = values.get(key);
    if (!value) throw new Error(`${file} does not set ${key}`);
    return value;
  };
  return {
    kubernetes: get('KUBERNETES_VERSION'),
    etcd: get('ETCD_VERSION'),
    kwok: get('KWOK_VERSION'),
    helm: get('HELM_VERSION'),
  };
}

/** A pinned tool build.sh made, such as `toolBin('kubectl')`: <cache>/bin/NAME-VERSION. */
export function toolBin(name: 'kubectl' | 'helm'): string {
  const versions = readPinnedVersions();
  const version = name === 'helm' ? versions.helm : versions.kubernetes;
  return path.join(outriggerCacheDir(), 'bin', `${name}-${version}`);
}
