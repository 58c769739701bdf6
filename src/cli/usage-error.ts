/** A mistake on the command line (or in a profile): exit 2 with a message that says what to type instead. */
export class UsageError extends Error {
  override name = 'UsageError';
}
