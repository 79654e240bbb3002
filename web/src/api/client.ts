// The typed client for brain's API: openapi-fetch over the types that
// openapi-typescript generates from ../../../openapi.json (make client).
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

export type ApiError = components["schemas"]["Error"];

export function newClient(baseUrl = "") {
  return createClient<paths>({ baseUrl, credentials: "same-origin" });
}

// health is the smallest typed call: the compiler checks the path, the
// success body and the error envelope against the spec.
export async function health(client = newClient()): Promise<string> {
  const { data, error } = await client.GET("/api/v1/health");
  if (error) {
    const e: ApiError = error;
    throw new Error(`${e.code}: ${e.message}`);
  }
  return `${data.status} ${data.version}`;
}

// JobLogEvent is one message of a job's log (GET /api/v1/jobs/{id}/log):
// the spec's x-events of that stream, a union the compiler narrows on
// event.
export type JobLogEvent = components["schemas"]["FollowJobLogEvent"];

// progress says where a job is, from one event of its log.
export function progress(ev: JobLogEvent): string {
  switch (ev.event) {
    case "job.progress":
      return `${ev.data.items_done} of ${ev.data.items_total}`;
    case "job.succeeded":
      return `done: ${ev.data.items_total}`;
    case "job.failed":
      return `failed: ${ev.data.error}`;
    case "stream.closing":
      return `closed: ${ev.data.reason}`;
  }
}
