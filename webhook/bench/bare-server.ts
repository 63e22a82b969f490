// The baselines of `make bench-webhook`: a bare Node.js HTTPS server that parses each body and
// serializes it back, the least any webhook does; or, given `floor`, one that reads each body and
// answers `{}` without parsing it, whose latency is what the host, TLS, Node's HTTP and the load
// generator take: the part of any server's p99 that is not its own work. Prints its port as one
// JSON line.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const [certFile, keyFile, mode] = process.argv.slice(2);
const constant = '{}';
const server = createServer(
  {
    cert: readFileSync(certFile ?? ''),
    key: readFileSync(keyFile ?? ''),
    keepAliveTimeout: 120_000,
  },
  (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => mode !== 'floor' && chunks.push(c));
    req.on('end', () => {
      const body =
        mode === 'floor'
          ? constant
          : JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')));
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
