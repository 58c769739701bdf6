/**
 * comlink over a Node MessagePort. comlink speaks the browser's
 * addEventListener('message', e => e.data) shape; a Node port emits the data
 * itself. This keeps one wrapper per listener so removal works.
 */
import type { MessagePort } from 'node:worker_threads';
import type { Endpoint } from 'comlink';

type Listener = ((ev: { data: unknown }) => void) | { handleEvent(ev: { data: unknown }): void };

export function nodeEndpoint(port: MessagePort): Endpoint {
  const wrappers = new WeakMap<object, (data: unknown) => void>();
  return {
    postMessage: (message: unknown, transfer?: unknown[]) => port.postMessage(message, transfer as never),
    addEventListener: (_type: string, listener: unknown) => {
      const l = listener as Listener;
      const wrapped = (data: unknown): void => {
        if (typeof l === 'function') l({ data });
        else l.handleEvent({ data });
      };
      wrappers.set(l, wrapped);
      port.on('message', wrapped);
    },
    removeEventListener: (_type: string, listener: unknown) => {
      const wrapped = wrappers.get(listener as object);
      if (wrapped === undefined) return;
      port.off('message', wrapped);
      wrappers.delete(listener as object);
    },
    start: () => port.start(),
  } as Endpoint;
}
