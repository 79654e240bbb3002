// The dashboard's one client (same origin, the session cookie) and the
// TanStack Query hooks over it, typed from the generated schema.
import createQueryHooks from "openapi-react-query";
import { QueryCache, QueryClient } from "@tanstack/react-query";
import { createBrainClient } from "../api/client";
import type { StreamStatus } from "../api/streams";
import { asApiError } from "./errors";

// ?pacing=off (or fail-fast) in the page's address sends without waiting
// for the budgets, to see how the page meets the server's 429s.
const pacing = new URLSearchParams(globalThis.location?.search).get("pacing");
export const client = createBrainClient({ pacing: pacing === "off" || pacing === "fail-fast" ? pacing : "delay" });
export const $api = createQueryHooks(client);

/** The session check's query key (GET /api/v1/auth/me without parameters). */
export const meKey = ["get", "/api/v1/auth/me"] as const;

export function createQueryClient(): QueryClient {
  const qc: QueryClient = new QueryClient({
    // A 401 anywhere means the session ended: check it again, which shows
    // the login page.
    queryCache: new QueryCache({
      onError: (e, q) => {
        if (asApiError(e)?.code === "unauthenticated" && q.queryKey[1] !== meKey[1]) void qc.invalidateQueries({ queryKey: meKey });
      },
    }),
    defaultOptions: {
      queries: {
        // The client itself waits out 429 and 503; retry only what never
        // reached brain (a dropped connection), once.
        retry: (n, e) => n < 1 && asApiError(e) === undefined,
        refetchOnWindowFocus: false,
        staleTime: 5_000,
      },
    },
  });
  return qc;
}

export const queryClient = createQueryClient();

/**
 * checkSession is a stream's onStatus companion: a stream refused as
 * unauthenticated means the session ended, so check it again (which shows
 * the login page).
 */
export function checkSession(s: StreamStatus): void {
  if (s.state === "failed" && s.error.code === "unauthenticated") void queryClient.invalidateQueries({ queryKey: meKey });
}
