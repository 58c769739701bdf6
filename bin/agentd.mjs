#!/usr/bin/env node
// The daemon: compiled JS when installed, else the source through tsx (see run-entry.mjs).
import { runEntry } from './run-entry.mjs';

await runEntry('agentd');
