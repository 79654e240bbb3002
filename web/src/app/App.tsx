// The dashboard: the query client, the session check (GET /api/v1/auth/me;
// unauthenticated shows the login page) and the page the hash names.
import { QueryClientProvider } from "@tanstack/react-query";
import { $api, queryClient } from "./api";
import { BusyBanner } from "./BusyBanner";
import { asApiError } from "./errors";
import { ErrorNotice } from "./ErrorNotice";
import { Layout } from "./Layout";
import { Login } from "./Login";
import { parseHash, useHash, type Route } from "./router";
import { Overview } from "./pages/Overview";
import { Ingest } from "./pages/Ingest";
import { Query } from "./pages/Query";
import { Jobs } from "./pages/Jobs";
import { JobDetail } from "./pages/JobDetail";
import { Keys } from "./pages/Keys";
import { Limits } from "./pages/Limits";

export function App() {
  return (
    <QueryClientProvider client={queryClient}>
      <Session />
    </QueryClientProvider>
  );
}

function Session() {
  const route = parseHash(useHash());
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
    <Layout route={route} username={me.data.user.username}>
      <Page route={route} />
    </Layout>
  );
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "overview":
      return <Overview />;
    case "ingest":
      return <Ingest />;
    case "query":
      return <Query />;
    case "jobs":
      return <Jobs />;
    case "job":
      return <JobDetail key={route.id} id={route.id} />;
    case "keys":
      return <Keys />;
    case "limits":
      return <Limits />;
    case "not-found":
      return (
        <section>
          <h1 tabIndex={-1}>Not found</h1>
          <p>
            There is no such page. <a href="#/">Go to the overview.</a>
          </p>
        </section>
      );
  }
}
