/**
 * A TCP relay in front of a PostgreSQL server that remembers how each client
 * session ended: with the protocol's Terminate message ('X', length 4), as a
 * client that closes its connections sends, or cut off mid-conversation, as a
 * process that exits without closing them leaves it; and how many bytes the
 * server has sent its clients.
 */
import net from 'node:net';

const TERMINATE = Buffer.from([0x58, 0, 0, 0, 4]);

export interface PgProxy {
  /** The URL to give agentd: `url` with its host and port replaced by the relay's. */
  url: string;
  /** One entry per client session that has ended: whether its last bytes were a Terminate message. */
  ended(): boolean[];
  /** Sessions still open. */
  open(): number;
  /** Bytes relayed from the server to its clients so far. */
  fromServer(): number;
  close(): Promise<void>;
}

export async function startPgProxy(url: string): Promise<PgProxy> {
  const target = new URL(url);
  const ended: boolean[] = [];
  const sockets = new Set<net.Socket>();
  let fromServer = 0;
  const server = net.createServer((client) => {
    sockets.add(client);
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    let tail = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      tail = Buffer.concat([tail, chunk]).subarray(-TERMINATE.length);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      fromServer += chunk.length;
      client.write(chunk);
    });
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      sockets.delete(client);
      ended.push(tail.equals(TERMINATE));
      client.destroy();
      upstream.destroy();
    };
    client.on('close', finish);
    client.on('error', finish);
    upstream.on('close', finish);
    upstream.on('error', finish);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relayed = new URL(url);
  relayed.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    url: relayed.toString(),
    ended: () => [...ended],
    open: () => sockets.size,
    fromServer: () => fromServer,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
