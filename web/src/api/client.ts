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
