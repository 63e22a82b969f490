// parseConfig never throws, not even for a fault of its own: the webhook and the controller read
// configurations in watch handlers, where a throw restarts the watch, which reads the same
// version and throws again. A fault is made here by a validator that throws when told to.

import { parseConfig } from '../src';

const mockFault = { on: false };

jest.mock('../src/config/config', () => {
  const actual = jest.requireActual<typeof import('../src/config/config')>('../src/config/config');
  return {
    ...actual,
    readConfig: (value: unknown) => {
      if (mockFault.on) throw new TypeError('a fault');
      return actual.readConfig(value);
    },
  };
});

it('answers a fault of its own as a refusal, not a throw', () => {
  expect(parseConfig('proxy: {}\n')).toMatchObject({ ok: true });
  mockFault.on = true;
  expect(parseConfig('proxy: {}\n')).toMatchObject({
    ok: false,
    errors: [{ path: '.', message: expect.stringMatching(/a fault.*fault in Outrigger/) }],
  });
});
