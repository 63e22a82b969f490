// A volume a set adds, checked as the API server checks a pod's: a name, and exactly one source
// of a kind Kubernetes knows, written as a mapping. The API server drops a key it does not know
// (`emptydir`) and then refuses the pod for having no source: every pod the set selects.

import { isRecord, type Volume } from '../kubernetes/k8s';
import { IDENTITY_VOLUME } from '../names';
import { describe, dnsLabel, type Field } from './schema';

/** The sources of a Kubernetes volume (core/v1 VolumeSource). */
export const VOLUME_SOURCES = [
  'awsElasticBlockStore',
  'azureDisk',
  'azureFile',
  'cephfs',
  'cinder',
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'fc',
  'flexVolume',
  'flocker',
  'gcePersistentDisk',
  'gitRepo',
  'glusterfs',
  'hostPath',
  'image',
  'iscsi',
  'nfs',
  'persistentVolumeClaim',
  'photonPersistentDisk',
  'portworxVolume',
  'projected',
  'quobyte',
  'rbd',
  'scaleIO',
  'secret',
  'storageos',
  'vsphereVolume',
] as const;

export const volume: Field<Volume> = (r, v, p) => {
  if (!isRecord(v)) return r.fail(p, `must be a volume (a mapping); got ${describe(v)}`);
  const name = dnsLabel(63)(r, v.name, [...p, 'name']);
  if (name === IDENTITY_VOLUME)
    return r.fail(
      [...p, 'name'],
      `${IDENTITY_VOLUME} is the proxy's volume; give the set's its own name`,
    );
  const sources: string[] = [];
  for (const [key, source] of Object.entries(v)) {
    if (key === 'name') continue;
    if (!(VOLUME_SOURCES as readonly string[]).includes(key))
      r.fail(
        [...p, key],
        'is not a kind of volume source; emptyDir, configMap, secret and projected are the common ones',
      );
    else if (!isRecord(source))
      r.fail(
        [...p, key],
        `must be a mapping (emptyDir: {} for the defaults); got ${describe(source)}`,
      );
    else sources.push(key);
  }
  if (sources.length === 0 && Object.keys(v).length < 2)
    r.fail(p, 'must have a source beside its name, such as emptyDir: {} or configMap: {name: ...}');
  if (sources.length > 1) r.fail(p, `must have one source; got ${sources.join(' and ')}`);
  return name === undefined ? undefined : (v as Volume);
};
