export * from './client.ts';
export { QueuedIterator } from './queued-iterator.ts';
export { readLocalToken } from './token-file.ts';
