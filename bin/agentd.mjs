#!/usr/bin/env node
// Runs the daemon from source through tsx (no build step needed).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/agentd.ts');
