/**
 * Types for comlink's own Node adapter. comlink 4.4.2 ships it as
 * dist/esm/node-adapter.mjs, but its declaration sits in a package without
 * "type": "module", where TypeScript reads it as CommonJS and finds no
 * callable default export; this states the adapter's signature as shipped.
 */
declare module 'comlink/dist/esm/node-adapter.mjs' {
  import type { Endpoint } from 'comlink';
  import type { MessagePort, Worker } from 'node:worker_threads';
  export default function nodeEndpoint(port: MessagePort | Worker): Endpoint;
}
