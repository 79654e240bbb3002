// What a failed call threw, as the API's error envelope when it is one: the
// typed client throws the envelope, the pacer a LocalRateLimitError, fetch a
// TypeError when brain cannot be reached.
import { LocalRateLimitError, type ApiError } from "../api/client";

export function asApiError(e: unknown): ApiError | undefined {
  if (e instanceof LocalRateLimitError) return e.envelope;
  if (typeof e === "object" && e !== null && "code" in e && "message" in e) {
    const { code, message } = e as { code: unknown; message: unknown };
    if (typeof code === "string" && typeof message === "string") return e as ApiError;
  }
  return undefined;
}

/** errorMessage words any failure for a person. */
export function errorMessage(e: unknown): string {
  const api = asApiError(e);
  if (api) return api.message;
  if (e instanceof TypeError) return "brain could not be reached — check the connection and try again.";
  if (typeof e === "string" && e.trim() !== "") return e;
  return "something went wrong — try again.";
}
