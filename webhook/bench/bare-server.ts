// The baseline of `make bench-webhook`: a bare Node.js HTTPS server that parses each body and
// serializes it back, the least any webhook does. Prints its port as one JSON line.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const [certFile, keyFile] = process.argv.slice(2);
const server = createServer(
  {
    cert: readFileSync(certFile ?? ''),
    key: readFileSync(keyFile ?? ''),
    keepAliveTimeout: 120_000,
  },
  (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    });
  },
);
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ https: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
