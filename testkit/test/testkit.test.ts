import { X509Certificate } from 'node:crypto';
import { makeServingCert, shippedContainer, shippedEnv, shippedMemoryLimitMiB } from '../src';

describe('makeServingCert', () => {
  it('makes a certificate for its hosts, signed by its CA, and the caBundle of that CA', () => {
    const made = makeServingCert({ hosts: ['127.0.0.1', 'webhook.test'], name: 'one' });
    const ca = new X509Certificate(made.caPem);
    const cert = new X509Certificate(made.certPem);
    expect(cert.checkIssued(ca)).toBe(true);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkHost('webhook.test')).toBe('webhook.test');
    expect(cert.checkHost('other.test')).toBeUndefined();
    expect(ca.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(Buffer.from(made.caBundle, 'base64').toString()).toBe(made.caPem);
    expect(made.certFile).toMatch(/one\.crt$/);
  });

  it('makes another CA each time, so one certificate is not trusted by the other CA', () => {
    const first = makeServingCert();
    const second = makeServingCert({ dir: first.dir, name: 'second' });
    expect(first.caPem).not.toBe(second.caPem);
    const cert = new X509Certificate(second.certPem);
    expect(cert.checkIssued(new X509Certificate(first.caPem))).toBe(false);
  });
});

describe('the shipped manifests', () => {
  it.each(['webhook', 'controller'] as const)('give the %s container its env and a limit', (c) => {
    expect(shippedContainer(c).name).toBe(c);
    expect(shippedEnv(c).NODE_OPTIONS).toMatch(/--max-(old|semi)-space-size=\d+/);
    expect(shippedMemoryLimitMiB(c)).toBeGreaterThan(0);
  });
});
