/** Errors of the sandbox, each with a stable code. */

/** startSandbox or setFaults was given values it cannot use; lists every problem. */
export class SandboxOptionsError extends Error {
  readonly code = 'sandbox.invalid-options';
  constructor(
    readonly problems: string[],
    options?: { cause?: unknown },
  ) {
    super(`invalid sandbox options: ${problems.join('; ')}`, options);
    this.name = 'SandboxOptionsError';
  }
}

/**
 * An API answer other than success (404, 405, 400, …), thrown by a handler and
 * turned into a response by the server. The body is DRF-shaped.
 */
export class ApiError extends Error {
  readonly code = 'sandbox.api-error';
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(`${status} ${JSON.stringify(body)}`);
    this.name = 'ApiError';
  }
}

export function notFound(): ApiError {
  return new ApiError(404, { detail: 'Not found.' });
}
