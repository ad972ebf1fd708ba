/** Waiting for something asynchronous to happen, in tests. */

/**
 * Calls `probe` every 50 ms until it returns something other than `undefined`, and returns that.
 * @param what what is awaited, for the error message
 * @throws Error `timed out waiting for <what>` after `timeoutMs` milliseconds
 */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
