// The serving certificate, from files or a Secret, swapped into the running server with
// setSecureContext: new connections get the new certificate, open ones finish undisturbed.

import { X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { FilePoller, certificateValidity } from '@outrigger/kube/without-api';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';

export interface KeyPair {
  cert: string;
  key: string;
}

/** Checks that the pair is usable and returns the certificate's expiry, or throws why not. */
export function checkKeyPair(pair: KeyPair): Date {
  createSecureContext({ cert: pair.cert, key: pair.key });
  return new Date(certificateValidity(new X509Certificate(pair.cert)).notAfterMs);
}

export class TlsStore {
  private pair: KeyPair | undefined;
  private readonly listeners: ((p: KeyPair) => void)[] = [];

  constructor(
    private readonly logger: Logger,
    private readonly metrics: WebhookMetrics,
  ) {}

  get current(): KeyPair | undefined {
    return this.pair;
  }

  onChange(listener: (p: KeyPair) => void): void {
    this.listeners.push(listener);
  }

  offer(pair: KeyPair, source: string): void {
    if (this.pair && this.pair.cert === pair.cert && this.pair.key === pair.key) return;
    let expiry: Date;
    try {
      expiry = checkKeyPair(pair);
    } catch (err) {
      this.logger.error('serving certificate refused; the current one stays in use', {
        source,
        error: (err as Error).message,
      });
      return;
    }
    this.pair = pair;
    this.metrics.certificateExpiry.set(expiry.getTime() / 1000);
    this.logger.info('serving certificate loaded', { source, notAfter: expiry.toISOString() });
    for (const l of this.listeners) l(pair);
  }
}

export interface TlsSource {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export class FileTlsSource implements TlsSource {
  private readonly poller: FilePoller;

  constructor(
    store: TlsStore,
    files: { certFile: string; keyFile: string; intervalMs?: number },
    logger: Logger,
  ) {
    const source = `files ${files.certFile}, ${files.keyFile}`;
    // Both files change when a certificate is renewed; a half-written pair is refused by the
    // store and taken on the next poll, once both are in place.
    this.poller = new FilePoller(
      [files.certFile, files.keyFile],
      ([cert, key]) => store.offer({ cert: cert ?? '', key: key ?? '' }, source),
      (err) => logger.error('serving certificate unreadable', { source, error: err.message }),
      files.intervalMs ?? 1000,
    );
  }

  start(): Promise<void> {
    return this.poller.start();
  }

  stop(): Promise<void> {
    this.poller.stop();
    return Promise.resolve();
  }
}
