// The frame of every signed-in page: the header with the navigation (it
// wraps on a narrow screen), who is signed in and Log out, the busy banner,
// and the page itself. On a page change the page's heading takes focus.
import { useEffect, useRef, type ReactNode } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { $api, meKey } from "./api";
import { BusyBanner } from "./BusyBanner";
import { features, type NavEntry } from "./feature";

// The overview first, then the features' entries, then the account's.
const links: readonly NavEntry[] = [
  { label: "Overview", path: "" },
  ...features.flatMap((f) => f.nav),
  { label: "API keys", path: "keys" },
  { label: "Rate limits", path: "limits" },
];

// section is the first segment of a path, the overview's "" for #/overview.
function section(path: readonly string[]): string {
  const first = path[0] ?? "";
  return first === "overview" ? "" : first;
}

export function Layout({ path, username, children }: { path: string[]; username: string; children: ReactNode }) {
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
  const at = path.join("/");
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
              <li key={l.path}>
                <a href={`#/${l.path}`} aria-current={section(path) === section(l.path.split("/")) ? "page" : undefined} data-testid={`nav-${l.path.split("/")[0] || "overview"}`}>
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
