// From source, a storage thread registers tsx before loading its .ts handler
// (Node 20 cannot load .ts in a worker on its own).
import { register } from 'tsx/esm/api';

register();
const handler = await import('./storage-tasks.ts');
export default handler.default;
