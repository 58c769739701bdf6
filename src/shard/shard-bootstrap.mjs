// Node 20 cannot load a .ts file in a worker and tsx's hooks do not reach
// workers, so a worker started from source registers tsx itself first.
import { register } from 'tsx/esm/api';

register();
await import('./shard.ts');
