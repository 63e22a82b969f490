// A stand-in for the proxy sidecar that Outrigger injects, for the demo and the in-cluster tests
// on the local cluster's real node (make images puts it in localhost/outrigger/demo-proxy:1.0).
// It proxies nothing: it listens where the injected container says (the OUTRIGGER_*_PORT
// environment the injection sets), answers the injected probes on the admin port (/ready,
// /live), reports the configuration revision it was started with (OUTRIGGER_REVISION), and
// stops cleanly on SIGTERM. Plain JavaScript, run by the image's node without a build; it
// writes nothing to disk, so it runs as any non-root user on a read-only root filesystem.
import { createServer } from 'node:http';

const env = process.env;
const revision = env.OUTRIGGER_REVISION || 'unknown';
const debug = ['trace', 'debug'].includes(env.OUTRIGGER_LOG_LEVEL ?? '');

function log(level, msg, fields = {}) {
  process.stderr.write(
    JSON.stringify({ level, time: new Date().toISOString(), msg, revision, ...fields }) + '\n',
  );
}

function port(name, fallback) {
  const raw = env[name] ?? String(fallback);
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    log('error', `${name}=${raw} is not a TCP port (1-65535); fix the proxy configuration`);
    process.exit(2);
  }
  return n;
}

const ports = {
  inbound: port('OUTRIGGER_INBOUND_PORT', 4143),
  outbound: port('OUTRIGGER_OUTBOUND_PORT', 4140),
  admin: port('OUTRIGGER_ADMIN_PORT', 4191),
};
const pod = {
  namespace: env.OUTRIGGER_POD_NAMESPACE || '',
  name: env.OUTRIGGER_POD_NAME || '',
  ownerKind: env.OUTRIGGER_OWNER_KIND || '',
  ownerName: env.OUTRIGGER_OWNER_NAME || '',
};
let stopping = false;
let requests = 0;

function reply(res, status, body, type = 'text/plain; charset=utf-8') {
  res.writeHead(status, { 'content-type': type, 'x-outrigger-revision': revision });
  res.end(body);
}

/** Inbound and outbound: no upstream to forward to, so each says who answered. */
function traffic(listener) {
  return (req, res) => {
    requests++;
    if (debug) log('debug', 'request', { listener, method: req.method, url: req.url });
    const body = { proxy: 'outrigger-demo-proxy', listener, revision, pod };
    reply(res, 200, JSON.stringify(body) + '\n', 'application/json');
  };
}

function admin(req, res) {
  const path = (req.url ?? '/').split('?')[0];
  switch (path) {
    case '/ready':
      return stopping ? reply(res, 503, 'stopping\n') : reply(res, 200, 'ready\n');
    case '/live':
      return reply(res, 200, 'live\n');
    case '/revision':
      return reply(res, 200, revision + '\n');
    case '/metrics':
      return reply(
        res,
        200,
        `# TYPE outrigger_demo_proxy_info gauge\noutrigger_demo_proxy_info{revision="${revision}"} 1\n` +
          `# TYPE outrigger_demo_proxy_requests_total counter\noutrigger_demo_proxy_requests_total ${requests}\n`,
        'text/plain; version=0.0.4',
      );
    default:
      return reply(res, 404, 'not found: try /ready, /live, /revision or /metrics\n');
  }
}

const servers = [
  ['inbound', traffic('inbound')],
  ['outbound', traffic('outbound')],
  ['admin', admin],
].map(([name, handler]) => {
  const server = createServer(handler);
  server.keepAliveTimeout = 5000;
  server.on('error', (err) => {
    log('error', `cannot listen on the ${name} port ${ports[name]}: ${err.message}`);
    process.exit(1);
  });
  return { name, server };
});

await Promise.all(
  servers.map(({ name, server }) => new Promise((resolve) => server.listen(ports[name], resolve))),
);
log('info', `demo proxy started: revision ${revision}`, {
  ports,
  pod,
  uid: process.getuid?.(),
  node: process.version,
});

function stop(signal) {
  if (stopping) return;
  stopping = true;
  log('info', `demo proxy stopping on ${signal}`, { requests });
  for (const { server } of servers) {
    server.close();
    server.closeAllConnections();
  }
  process.exit(0);
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
