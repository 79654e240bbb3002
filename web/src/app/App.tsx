// The dashboard: the query client, the session check (GET /api/v1/auth/me;
// unauthenticated shows the login page) and the page the hash names: one of
// the dashboard's own, else one of a feature's (feature.ts).
import { QueryClientProvider } from "@tanstack/react-query";
import { $api, queryClient } from "./api";
import { BusyBanner } from "./BusyBanner";
import { asApiError } from "./errors";
import { ErrorNotice } from "./ErrorNotice";
import { Layout } from "./Layout";
import { Login } from "./Login";
import { features, type FeatureRoute } from "./feature";
import { match, parseHash, useHash } from "./router";
import { Overview } from "./pages/Overview";
import { Keys } from "./pages/Keys";
import { Limits } from "./pages/Limits";

/** Every page: the dashboard's own, then each feature's. */
export const routes: readonly FeatureRoute[] = [
  { path: "", page: () => <Overview /> },
  { path: "overview", page: () => <Overview /> },
  { path: "keys", page: () => <Keys /> },
  { path: "limits", page: () => <Limits /> },
  ...features.flatMap((f) => f.routes),
];

export function App() {
  return (
    <QueryClientProvider client={queryClient}>
      <Session />
    </QueryClientProvider>
  );
}

function Session() {
  const path = parseHash(useHash());
  const me = $api.useQuery("get", "/api/v1/auth/me", {}, { staleTime: Infinity });
  // Before the session is known (the check itself may be waiting out a
  // 429), the busy banner stands above the page too.
  if (me.isPending) {
    return (
      <>
        <BusyBanner />
        <main className="login">
          <p role="status">Checking your session…</p>
        </main>
      </>
    );
  }
  if (me.isError) {
    if (asApiError(me.error)?.code === "unauthenticated")
      return (
        <>
          <BusyBanner />
          <Login />
        </>
      );
    return (
      <>
        <BusyBanner />
        <main className="login">
          <div className="card stack">
            <h1>brain</h1>
            <ErrorNotice error={me.error} />
            <button type="button" onClick={() => void me.refetch()}>
              Try again
            </button>
          </div>
        </main>
      </>
    );
  }
  return (
    <Layout path={path} username={me.data.user.username}>
      <Page path={path} />
    </Layout>
  );
}

function Page({ path }: { path: string[] }) {
  for (const r of routes) {
    const params = match(r.path, path);
    if (params) return r.page(params);
  }
  return (
    <section>
      <h1 tabIndex={-1}>Not found</h1>
      <p>
        There is no such page. <a href="#/">Go to the overview.</a>
      </p>
    </section>
  );
}
