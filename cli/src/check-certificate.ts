// The certificate the webhook serves, read over TLS from the address the webhook configuration
// names, checked against the configuration's caBundle: trusted, for the right name, not expiring.

import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { TLS_SECRET_NAME, WEBHOOK_SERVICE } from '@outrigger/shared';
import { apiErrorMessage, certificateValidity, daysLeft, isExpired } from '@outrigger/kube';
import { secretPath } from './api-paths';
import { fail, pass, type Check, type Ctx } from './check';

const message = apiErrorMessage;

const CERT_WARN_DAYS = 7;

/** The certificate the webhook serves: from the wire when called by URL, else from its Secret. */
async function servedCertificate(ctx: Ctx): Promise<{ cert: X509Certificate; host: string }> {
  const entry = ctx.webhook?.[0];
  const url = entry?.clientConfig.url;
  if (url) {
    const { hostname, port } = new URL(url);
    const raw = await new Promise<Buffer>((resolve, reject) => {
      const socket = tlsConnect(
        {
          host: hostname,
          port: Number(port || 443),
          rejectUnauthorized: false,
          ...(isIP(hostname) ? {} : { servername: hostname }),
        },
        () => {
          const peer = socket.getPeerCertificate();
          socket.end();
          resolve(peer.raw);
        },
      );
      socket.setTimeout(3000, () =>
        socket.destroy(new Error(`no answer from ${hostname}:${port} in 3 s`)),
      );
      socket.on('error', reject);
    });
    return { cert: new X509Certificate(raw), host: hostname };
  }
  const secret = await ctx.api.get<{ data?: Record<string, string> }>(
    secretPath(ctx.namespace, TLS_SECRET_NAME),
  );
  const pem = Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64').toString('utf8');
  return { cert: new X509Certificate(pem), host: `${WEBHOOK_SERVICE}.${ctx.namespace}.svc` };
}

export const certificateTrusted: Check = async (ctx) => {
  const caBundle = ctx.webhook?.[0]?.clientConfig.caBundle;
  if (!caBundle)
    return fail('no caBundle to verify against', 'see the webhook configuration check');
  let served: { cert: X509Certificate; host: string };
  try {
    served = await servedCertificate(ctx);
  } catch (err) {
    return fail(
      `cannot read the serving certificate: ${message(err)}`,
      'the webhook is not running or not reachable: start it, then look at its logs',
    );
  }
  const cas = Buffer.from(caBundle, 'base64')
    .toString('utf8')
    .split(/(?=-----BEGIN CERTIFICATE-----)/)
    .filter((p) => p.includes('BEGIN'));
  const trusted = cas.some((pem) => served.cert.verify(new X509Certificate(pem).publicKey));
  if (!trusted)
    return fail(
      `the caBundle does not verify the certificate the webhook serves (issuer ${served.cert.issuer})`,
      'self-managed mode: the controller writes the caBundle, see its logs; cert-manager mode: see the CA injector; external mode: set certificates.caBundle to the CA that signed the serving certificate',
    );
  if (
    served.cert.checkHost(served.host) === undefined &&
    served.cert.checkIP(served.host) === undefined
  )
    return fail(`the certificate is not for ${served.host}`, `issue it for ${served.host}`);
  const validity = certificateValidity(served.cert);
  const nowMs = Date.now();
  const days = daysLeft(validity, nowMs);
  if (isExpired(validity, nowMs))
    return fail(`expired ${served.cert.validTo}`, 'renew the serving certificate now');
  if (days < CERT_WARN_DAYS)
    return fail(
      `expires in ${days.toFixed(1)} days (${served.cert.validTo})`,
      'renew the serving certificate; cert-manager renews it by itself',
    );
  return pass(`verified by the caBundle, for ${served.host}, ${Math.floor(days)} days left`);
};
