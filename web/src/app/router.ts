// A small hash router: #/keys, #/things/<id>, ... The page shown follows the
// hash, so links, back and forward work, and the server needs to know
// nothing of the dashboard's pages. A route is a path of segments such as
// "things/:id" (see FeatureRoute); App matches the hash against each.
import { useSyncExternalStore } from "react";

/** parseHash reads the hash's segments, decoded: "#/things/a%2Fb/" is ["things", "a/b"], "#/" none. */
export function parseHash(hash: string): string[] {
  const path = hash.replace(/^#/, "").replace(/^\/+|\/+$/g, "");
  if (path === "") return [];
  return path.split("/").map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s; // a stray %: no route takes it as written
    }
  });
}

/** href is the hash of a route's segments, each escaped: href("things", "a/b") is "#/things/a%2Fb". */
export function href(...segments: string[]): string {
  return "#/" + segments.map(encodeURIComponent).join("/");
}

/**
 * match says whether segments are a route of pattern ("things/:id"), and
 * with what parameters: { id: "42" } for ["things", "42"]. A ":name"
 * segment takes one segment that is not empty; every other must be equal.
 */
export function match(pattern: string, segments: readonly string[]): Record<string, string> | undefined {
  const want = pattern === "" ? [] : pattern.split("/");
  if (want.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, w] of want.entries()) {
    const s = segments[i]!;
    if (w.startsWith(":") && s !== "") params[w.slice(1)] = s;
    else if (w !== s) return undefined;
  }
  return params;
}

function subscribe(onChange: () => void): () => void {
  window.addEventListener("hashchange", onChange);
  return () => window.removeEventListener("hashchange", onChange);
}

/** useHash is the location's hash, kept current. */
export function useHash(): string {
  return useSyncExternalStore(subscribe, () => window.location.hash);
}
