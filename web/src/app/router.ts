// A small hash router: #/ingest, #/jobs/<id>, ... The page shown follows the
// hash, so links, back and forward work, and the server needs to know
// nothing of the dashboard's pages.
import { useSyncExternalStore } from "react";

export type Route =
  | { page: "overview" }
  | { page: "ingest" }
  | { page: "query" }
  | { page: "jobs" }
  | { page: "job"; id: string }
  | { page: "keys" }
  | { page: "limits" }
  | { page: "not-found" };

export function parseHash(hash: string): Route {
  const path = hash.replace(/^#/, "").replace(/^\/+|\/+$/g, "");
  const [head = "", id, ...rest] = path.split("/");
  if (rest.length > 0) return { page: "not-found" };
  if (id !== undefined) return head === "jobs" && id !== "" ? { page: "job", id: decodeURIComponent(id) } : { page: "not-found" };
  switch (head) {
    case "":
    case "overview":
      return { page: "overview" };
    case "ingest":
    case "query":
    case "jobs":
    case "keys":
    case "limits":
      return { page: head };
    default:
      return { page: "not-found" };
  }
}

export function href(r: Route): string {
  switch (r.page) {
    case "overview":
      return "#/";
    case "job":
      return `#/jobs/${encodeURIComponent(r.id)}`;
    default:
      return `#/${r.page}`;
  }
}

function subscribe(onChange: () => void): () => void {
  window.addEventListener("hashchange", onChange);
  return () => window.removeEventListener("hashchange", onChange);
}

/** useHash is the location's hash, kept current. */
export function useHash(): string {
  return useSyncExternalStore(subscribe, () => window.location.hash);
}
