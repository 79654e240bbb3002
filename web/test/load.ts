// Load for the paced-client tests: a fetch that counts what reaches the
// server and its 429s, and n calls made `workers` at a time.
type Fetch = (input: Request, init?: RequestInit) => Promise<Response>;

/** counting wraps fetch, counting what reaches the server and its 429s. */
export function counting(next: Fetch = (i, o) => globalThis.fetch(i, o)) {
  const n = { sent: 0, refused: 0 };
  const fetch: Fetch = async (input, init) => {
    n.sent++;
    const res = await next(input, init);
    if (res.status === 429) n.refused++;
    return res;
  };
  return { n, fetch };
}

/** run makes n calls, `workers` at a time, and returns the seconds they took and their statuses. */
export async function run(n: number, workers: number, call: () => Promise<number>) {
  const statuses: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < n) {
        next++;
        statuses.push(await call());
      }
    }),
  );
  return { seconds: (performance.now() - start) / 1000, statuses };
}
