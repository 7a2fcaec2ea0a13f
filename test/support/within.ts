// A wait a test bounds itself, so that what it waits for not happening fails the test with
// a reason (and the seed to replay) instead of holding the run until a runner's timeout.
export function within<T>(work: Promise<T>, ms: number, why: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${why()}`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
