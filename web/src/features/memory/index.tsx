// The memory example's pages in the dashboard: ingest, query and the jobs,
// on #/ingest, #/query, #/jobs and #/jobs/<id>. Deleting this directory
// takes them out of the dashboard (src/app/feature.ts finds it).
import type { Feature } from "../../app/feature";
import { Ingest } from "./Ingest";
import { JobDetail } from "./JobDetail";
import { Jobs } from "./Jobs";
import { Query } from "./Query";

export const feature: Feature = {
  nav: [
    { label: "Ingest", path: "ingest" },
    { label: "Query", path: "query" },
    { label: "Jobs", path: "jobs" },
  ],
  routes: [
    { path: "ingest", page: () => <Ingest /> },
    { path: "query", page: () => <Query /> },
    { path: "jobs", page: () => <Jobs /> },
    { path: "jobs/:id", page: ({ id = "" }) => <JobDetail key={id} id={id} /> },
  ],
};
