/**
 * `PUT /api/v1/crates/new` as Cargo sends it (docs/cargo.md), for the requests the e2e test makes
 * without cargo; the bodies come from test/registry/cargo/frames.ts.
 */

/** `PUT <baseUrl>/api/v1/crates/new` with `frame` as Cargo sends it (no content type, raw token). */
export async function putCrate(
  baseUrl: string,
  token: string,
  frame: Buffer,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${baseUrl}/api/v1/crates/new`, {
    method: "PUT",
    headers: { authorization: token },
    body: frame,
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the assertion message
  }
  return { status: response.status, body };
}
