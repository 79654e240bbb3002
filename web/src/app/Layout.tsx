// The frame of every signed-in page: the header with the navigation (it
// wraps on a narrow screen), who is signed in and Log out, the busy banner,
// and the page itself. On a page change the page's heading takes focus.
import { useEffect, useRef, type ReactNode } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { $api, meKey } from "./api";
import { BusyBanner } from "./BusyBanner";
import { href, type Route } from "./router";

const links: { route: Route; label: string; testId: string }[] = [
  { route: { page: "overview" }, label: "Overview", testId: "nav-overview" },
  { route: { page: "ingest" }, label: "Ingest", testId: "nav-ingest" },
  { route: { page: "query" }, label: "Query", testId: "nav-query" },
  { route: { page: "jobs" }, label: "Jobs", testId: "nav-jobs" },
  { route: { page: "keys" }, label: "API keys", testId: "nav-keys" },
  { route: { page: "limits" }, label: "Rate limits", testId: "nav-limits" },
];

function current(route: Route, link: Route): boolean {
  return route.page === link.page || (route.page === "job" && link.page === "jobs");
}

export function Layout({ route, username, children }: { route: Route; username: string; children: ReactNode }) {
  const qc = useQueryClient();
  const logout = $api.useMutation("post", "/api/v1/auth/logout", {
    // Whatever the answer, forget this session's data and check again: a
    // logged-out session shows the login page.
    onSettled: async () => {
      qc.removeQueries({ predicate: (q) => q.queryKey[1] !== meKey[1] });
      await qc.resetQueries({ queryKey: meKey });
    },
  });
  const main = useRef<HTMLElement>(null);
  const first = useRef(true);
  const at = href(route);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.querySelector("h1")?.focus();
  }, [at]);

  return (
    <>
      <a className="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.querySelector("h1")?.focus())}>
        Skip to content
      </a>
      <header className="top">
        <span className="brand">brain</span>
        <nav aria-label="Main">
          <ul>
            {links.map((l) => (
              <li key={l.testId}>
                <a href={href(l.route)} aria-current={current(route, l.route) ? "page" : undefined} data-testid={l.testId}>
                  {l.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <span data-testid="whoami">{username}</span>
          <button type="button" onClick={() => logout.mutate({})} disabled={logout.isPending} data-testid="logout">
            Log out
          </button>
        </div>
      </header>
      <BusyBanner />
      <main id="main" ref={main}>
        {children}
      </main>
    </>
  );
}
