import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

import type { ApiProblem, FieldError } from '../contract/wire.js';
import { LIMITS } from '../core/submit/schemas.js';

export type HttpResult = APIGatewayProxyStructuredResultV2 & { statusCode: number; body: string };

const PROBLEM_TITLES: Record<number, string> = {
  400: 'The request is not valid',
  401: 'Not authenticated',
  404: 'Not found',
  409: 'The task is not in a state that allows this',
  413: 'The request is too large',
  429: 'Too many requests',
  500: 'Internal error',
  503: 'The service is over its capacity',
};

export function problem(status: number, kind: string, detail: string, errors?: readonly FieldError[]): ApiProblem {
  return {
    type: `/problems/${kind}`,
    title: PROBLEM_TITLES[status] ?? 'Error',
    status,
    detail,
    ...(errors && { errors }),
  };
}

export function validationProblem(errors: readonly FieldError[]): ApiProblem {
  const summary = errors.map((error) => `${error.path} ${error.message}`).join('; ');
  return problem(
    400,
    'validation',
    `${errors.length === 1 ? 'One field is' : `${errors.length} fields are`} invalid: ${summary}`,
    errors,
  );
}

export function problemResponse(body: ApiProblem, headers: Record<string, string> = {}): HttpResult {
  return {
    statusCode: body.status,
    headers: { ...headers, 'content-type': 'application/problem+json' },
    body: JSON.stringify(body),
  };
}

export function jsonResponse(statusCode: number, body: unknown): HttpResult {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

export type JsonBody =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: ApiProblem };

/** Parses the request body as JSON, or explains in problem form why it is not. */
export function readJsonBody(event: APIGatewayProxyEventV2): JsonBody {
  const raw =
    event.body === undefined
      ? ''
      : event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body;
  const bytes = Buffer.byteLength(raw);
  if (bytes > LIMITS.requestBodyBytes) {
    return {
      ok: false,
      problem: problem(
        413,
        'payload-too-large',
        `The body is ${bytes} bytes; the api accepts at most ${LIMITS.requestBodyBytes} bytes so that any request fits Lambda's 6 MB event limit. Split a batch into smaller ones.`,
      ),
    };
  }
  if (raw.trim() === '')
    return { ok: false, problem: validationProblem([{ path: '(body)', message: 'is empty; send a JSON object' }]) };
  let prototypeKey = false;
  try {
    const value: unknown = JSON.parse(raw, function noteProtoKeys(key, field: unknown) {
      if (key === '__proto__') prototypeKey = true;
      return field;
    });
    // Harmless in JSON.parse's own output, but a "__proto__" key becomes a prototype the moment
    // any code copies the object by assignment; no caller needs one, so none gets in.
    if (prototypeKey) {
      return {
        ok: false,
        problem: validationProblem([{ path: '(body)', message: 'must not contain a "__proto__" key anywhere' }]),
      };
    }
    return { ok: true, value };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, problem: validationProblem([{ path: '(body)', message: `is not valid JSON (${reason})` }]) };
  }
}
