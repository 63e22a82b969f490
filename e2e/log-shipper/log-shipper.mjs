// A stand-in for a log shipper, the second sidecar set of the in-cluster tests on the local
// cluster's real node (make images puts it in localhost/outrigger/log-shipper:1.0). It ships
// nothing anywhere: every few seconds it reads what the app wrote under SHIPPER_PATH since the
// last look and counts it; it answers /ready and /live on SHIPPER_PORT, reports the set revision
// it was started with (SHIPPER_REVISION, which the set's container gives it from the pod's
// label through the downward API) at /revision, and stops cleanly on SIGTERM. Plain
// JavaScript, run by the image's node without a build; it writes nothing to disk.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';

const env = process.env;
const revision = env.SHIPPER_REVISION || 'unknown';
const path = env.SHIPPER_PATH || '/var/log/app';

function log(level, msg, fields = {}) {
  process.stderr.write(
    JSON.stringify({ level, time: new Date().toISOString(), msg, revision, ...fields }) + '\n',
  );
}

const raw = env.SHIPPER_PORT ?? '2020';
const port = Number(raw);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  log('error', `SHIPPER_PORT=${raw} is not a TCP port (1-65535); fix the set's container`);
  process.exit(2);
}

/** Bytes read so far, by file. */
const seen = new Map();
let shipped = 0;
let stopping = false;

function look() {
  let files = [];
  try {
    files = readdirSync(path);
  } catch (err) {
    if (err.code !== 'ENOENT') log('warn', `cannot read ${path}`, { error: err.code });
    return;
  }
  for (const file of files) {
    try {
      const size = statSync(join(path, file)).size;
      const before = seen.get(file) ?? 0;
      if (size > before) shipped += size - before;
      seen.set(file, size);
    } catch {
      // gone between the listing and the stat: nothing to ship
    }
  }
}

const server = createServer((req, res) => {
  const url = (req.url ?? '/').split('?')[0];
  const reply = (status, body) => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(body);
  };
  if (url === '/ready') return stopping ? reply(503, 'stopping\n') : reply(200, 'ready\n');
  if (url === '/live') return reply(200, 'live\n');
  if (url === '/revision') return reply(200, revision + '\n');
  if (url === '/shipped') return reply(200, `${shipped}\n`);
  return reply(404, 'not found: try /ready, /live, /revision or /shipped\n');
});

server.listen(port, () => log('info', `log shipper ready on :${port}, watching ${path}`));
const timer = setInterval(look, 5000);

process.on('SIGTERM', () => {
  stopping = true;
  clearInterval(timer);
  look();
  log('info', 'stopping', { shipped });
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
});
