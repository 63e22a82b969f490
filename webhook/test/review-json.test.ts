// The answer's JSON is spliced around the patch's base64 instead of scanned by JSON.stringify:
// it must stay, byte for byte, what JSON.stringify of the wrapped response gives, whatever the
// uid and the warnings hold.

import { allow, deny, reviewJson, wrap, type AdmissionResponse } from '../src/review';

const patch = [{ op: 'add' as const, path: '/metadata/labels', value: { a: 'b"\\\u2028' } }];
const hostile = [
  'plain-uid',
  'quote " and backslash \\',
  '"patch":""',
  ',"patch":"","x":"',
  '\u0000\u001f\u2028\ud800',
  '',
];

describe('reviewJson', () => {
  const responses: [string, AdmissionResponse][] = hostile.flatMap((uid) => [
    [`allowed with a patch, uid ${JSON.stringify(uid)}`, allow(uid, patch)],
    [
      `allowed with a patch and warnings, uid ${JSON.stringify(uid)}`,
      allow(uid, patch, [uid, 'w']),
    ],
    [`allowed unchanged, uid ${JSON.stringify(uid)}`, allow(uid, [], [uid])],
    [`denied, uid ${JSON.stringify(uid)}`, deny(uid, 500, `"patch":"" ${uid}`)],
  ]);

  it.each(responses)('is JSON.stringify of the wrapped response: %s', (_name, response) => {
    expect(reviewJson(response)).toBe(JSON.stringify(wrap(response)));
  });

  it('gives back the patch it was given', () => {
    const parsed = JSON.parse(reviewJson(allow('u', patch))) as { response: { patch: string } };
    expect(JSON.parse(Buffer.from(parsed.response.patch, 'base64').toString('utf8'))).toEqual(
      patch,
    );
  });
});
