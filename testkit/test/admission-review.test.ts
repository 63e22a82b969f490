import { admissionReview } from '../src';

describe('admissionReview', () => {
  it('wraps the object in a Pod CREATE review in namespace shop, with a new uid each time', () => {
    const first = JSON.parse(admissionReview({ spec: {} })) as { request: Record<string, unknown> };
    const second = JSON.parse(admissionReview({ spec: {} })) as { request: { uid: string } };
    expect(first).toMatchObject({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        kind: { group: '', version: 'v1', kind: 'Pod' },
        operation: 'CREATE',
        namespace: 'shop',
        object: { spec: {} },
      },
    });
    expect(second.request.uid).not.toBe(first.request.uid);
  });

  it("lets the overrides replace the request's fields", () => {
    const review = JSON.parse(admissionReview({}, { operation: 'UPDATE', uid: 'mine' })) as {
      request: { operation: string; uid: string };
    };
    expect(review.request).toMatchObject({ operation: 'UPDATE', uid: 'mine' });
  });
});
