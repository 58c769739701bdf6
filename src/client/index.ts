/// <reference types="node" preserve="true" />
// The declarations use Node's types (sockets, NodeJS.ProcessEnv): a project with TypeScript's default `types` gets them too.
export * from './client.ts';
export { defaultHome, resolveConnectOptions } from './connect-options.ts';
export { QueuedIterator } from './queued-iterator.ts';
export { backoffDelay, isRetryable, withRetry, type RetryFailure, type RetryOptions } from './retry.ts';
export { readLocalToken } from './token-file.ts';
