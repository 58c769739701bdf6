export * from './client.ts';
export { QueuedIterator } from './queued-iterator.ts';
