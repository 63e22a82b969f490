// An AdmissionReview around an object, as the API server posts it to a mutating webhook: a Pod
// CREATE in namespace shop unless `overrides` say otherwise, each with a uid of its own.

let counter = 0;

/** The review's JSON text; `overrides` replace fields of its request (kind, operation...). */
export function admissionReview(object: unknown, overrides: Record<string, unknown> = {}): string {
  counter++;
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `uid-${counter}`,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      operation: 'CREATE',
      namespace: 'shop',
      object,
      ...overrides,
    },
  });
}
