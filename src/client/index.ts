export * from './client.ts';
export { defaultHome, resolveConnectOptions } from './connect-options.ts';
export { QueuedIterator } from './queued-iterator.ts';
export { backoffDelay, isRetryable, withRetry, type RetryFailure, type RetryOptions } from './retry.ts';
export { readLocalToken } from './token-file.ts';
