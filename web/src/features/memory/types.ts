// The example's types, read from its operations in the spec (not by their
// schemas' names, which the spec may qualify): what the ingest takes and
// answers, a query's result, a job's status.
import type { paths } from "../../api/schema";

type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;

export type IngestRequest = Json<paths["/api/v1/memory/ingest"]["post"]["requestBody"]>;
export type IngestItem = IngestRequest["items"][number];
export type IngestOutput = Json<paths["/api/v1/memory/ingest"]["post"]["responses"][202]>;
export type Result = Json<paths["/api/v1/memory/query"]["get"]["responses"][200]>["results"][number];
export type Job = Json<paths["/api/v1/jobs/{id}"]["get"]["responses"][200]>;
export type JobStatus = Job["status"];
