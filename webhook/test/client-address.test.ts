// Which client an address is: one key per IPv4 address however it arrived, and per IPv6 address.

import { clientOf } from '../src/client-address';

describe('clientOf', () => {
  it.each([
    ['10.0.0.1', '10.0.0.1'],
    ['::ffff:10.0.0.1', '10.0.0.1'],
    ['::FFFF:127.0.0.2', '127.0.0.2'],
    ['2001:db8:0:1::a', '2001:db8:0:1::a'],
    ['::1', '::1'],
    ['::ffff:1.2.3', '::ffff:1.2.3'],
    [undefined, ''],
  ])('%s is %s', (address, client) => {
    expect(clientOf(address)).toBe(client);
  });
});
