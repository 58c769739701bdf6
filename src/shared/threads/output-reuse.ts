/**
 * Which output buffers travel back from main to the shard that packed them
 * (OutputBuffers in shard-messages.ts), for the shard to pack later batches
 * into: the bounds that keep that worth a message and memory bounded.
 */
/** Smaller sections buffers are left to the collector: a long stream's batches are larger, a small turn's are not worth a message. */
export const OUTPUT_REUSE_MIN_BYTES = 32 * 1024;
/** A bigger buffer (one burst) is not kept: memory returns after a big reply. */
export const OUTPUT_REUSE_MAX_BYTES = 1024 * 1024;
/**
 * The fewest bytes per section of a batch whose buffer travels back: main
 * writes every section of such a batch with a completion callback (a tick of
 * its own), which a broadcast of small events to hundreds of observers would
 * pay per observer. Long answers, what left dead buffers in main, come in
 * big sections.
 */
export const OUTPUT_REUSE_MIN_SECTION_BYTES = 4096;

/**
 * Whether a batch of `sections` sections, `bytes` bytes in all, is one whose
 * buffer main hands back and the shard reuses. The shard decides it and
 * marks the batch (FrameBatch.sectionsReturn), so no buffer main keeps is
 * ever packed into a handed-back one, and main does not count sections.
 */
export function outputReturns(bytes: number, sections: number): boolean {
  return bytes >= OUTPUT_REUSE_MIN_BYTES && bytes <= OUTPUT_REUSE_MAX_BYTES && bytes >= OUTPUT_REUSE_MIN_SECTION_BYTES * sections;
}
