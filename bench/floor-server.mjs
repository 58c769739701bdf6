// The floor: a minimal Node length-prefix server speaking agentd's framing.
// It answers every frame with one LAST frame carrying the same body, doing
// nothing else, so it is the best a Node daemon on this machine can do.
// Plain JS on purpose: no loader, no dependencies.
//   node bench/floor-server.mjs UNIX_PATH   (prints "port N" once both listen)
import { createServer } from 'node:net';
import { rmSync } from 'node:fs';

const path = process.argv[2];
const onConn = (socket) => {
  socket.setNoDelay(true);
  let pending = null;
  socket.on('data', (chunk) => {
    let buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
    pending = null;
    let at = 0;
    socket.cork();
    while (buf.length - at >= 9) {
      const len = buf.readUInt32BE(at);
      if (buf.length - at < 9 + len) break;
      const frame = Buffer.from(buf.subarray(at, at + 9 + len));
      frame[8] = 1;
      socket.write(frame);
      at += 9 + len;
    }
    socket.uncork();
    if (at < buf.length) pending = buf.subarray(at);
  });
  socket.on('error', () => {});
};
rmSync(path, { force: true });
const unix = createServer(onConn).listen(path, () => {
  const tcp = createServer(onConn).listen(0, '127.0.0.1', () => {
    process.stdout.write(`port ${tcp.address().port}\n`);
  });
});
process.on('SIGTERM', () => process.exit(0));
void unix;
