// From source, the writer thread registers tsx before loading its .ts file
// (Node 20 cannot load .ts in a worker on its own).
import { register } from 'tsx/esm/api';

register();
await import('./writer-thread.ts');
