// The API paths the CLI reads and writes (the workloads' and the Lease's are kube's).

const namespaced = (resource: string, namespace: string, name?: string): string =>
  `/api/v1/namespaces/${namespace}/${resource}${name ? `/${name}` : ''}`;

export const VERSION_PATH = '/version';

export const configMapPath = (namespace: string, name: string): string =>
  namespaced('configmaps', namespace, name);

export const secretPath = (namespace: string, name: string): string =>
  namespaced('secrets', namespace, name);

/** Every namespace, or one. */
export const namespacePath = (name?: string): string =>
  `/api/v1/namespaces${name ? `/${name}` : ''}`;

/** The pods of every namespace, or of one. */
export const podsPath = (namespace?: string): string =>
  namespace ? namespaced('pods', namespace) : '/api/v1/pods';

export const webhookConfigurationPath = (name: string): string =>
  `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${name}`;

export const SUBJECT_ACCESS_REVIEWS_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
