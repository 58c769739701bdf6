// The HTTP floor: a minimal node:http server answering every request with
// `{}` as JSON (what agentd's GET /v1/ping answers), keep-alive on, doing
// nothing else: the best a Node HTTP server on this machine does.
// Plain JS on purpose: no loader, no dependencies.
//   node bench/http-floor.mjs   (prints "port N" once it listens)
import { createServer } from 'node:http';

const BODY = Buffer.from('{}');
const server = createServer({ keepAlive: true, noDelay: true }, (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': BODY.length });
    res.end(BODY);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`port ${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
