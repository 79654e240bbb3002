// What a feature adds to the dashboard: entries in the navigation and pages
// on hash routes. A feature is a directory of its own, src/features/<name>/,
// whose index.tsx exports `feature: Feature`; the build finds every such
// directory (features, below), so adding one or deleting one changes no file
// of the dashboard's own.
import type { ReactNode } from "react";

/**
 * A page on a hash route. path is the route's segments after "#/", such as
 * "things" or "things/:id": a ":name" segment takes any one segment, which
 * page gets decoded as params.name.
 */
export interface FeatureRoute {
  path: string;
  page: (params: Record<string, string>) => ReactNode;
}

/** An entry of the main navigation: it opens "#/" + path and is marked current on every route whose first segment is path's. */
export interface NavEntry {
  label: string;
  path: string;
}

export interface Feature {
  /** Entries of the navigation, in order, shown after the overview and before the API keys and rate limits. */
  nav: readonly NavEntry[];
  /** Pages; a route the dashboard has itself (#/, #/keys, #/limits) is the dashboard's. */
  routes: readonly FeatureRoute[];
}

const found = import.meta.glob<Feature>("../features/*/index.tsx", { eager: true, import: "feature" });

/** The features the dashboard was built with, in the order of their directories' names. */
export const features: readonly Feature[] = Object.keys(found)
  .sort()
  .map((k) => found[k]!);
