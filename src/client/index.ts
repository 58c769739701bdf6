export * from './client.ts';
export { defaultHome, resolveConnectOptions } from './connect-options.ts';
export { QueuedIterator } from './queued-iterator.ts';
export { readLocalToken } from './token-file.ts';
