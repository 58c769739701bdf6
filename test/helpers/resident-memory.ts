/**
 * A process's resident memory from /proc/PID/status (Linux), for the tests and
 * benches that measure how far one request or one operation raises its peak.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** A process id, or `self` for the calling process. */
export type ProcessId = number | 'self';

/** A field of /proc/PID/status, in bytes. */
export function statusBytes(pid: ProcessId, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** The process's peak resident memory since it started or since the last resetPeak. */
export const peakResident = (pid: ProcessId): number => statusBytes(pid, 'VmHWM');

/** Resets the peak to where resident memory stands now (clear_refs 5), so an earlier, higher peak hides no growth; returns that. */
export function resetPeak(pid: ProcessId): number {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
  return statusBytes(pid, 'VmRSS');
}
