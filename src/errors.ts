// The closed set of error codes clients can see, and helpers that throw them. Anything
// else that escapes a resolver is reported as INTERNAL_SERVER_ERROR (see formatError).

import { ApolloServerErrorCode, unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';

export const ErrorCode = {
  BAD_USER_INPUT: 'BAD_USER_INPUT',
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  RATE_LIMITED: 'RATE_LIMITED',
  CONFLICT: 'CONFLICT',
  INTERNAL_SERVER_ERROR: 'INTERNAL_SERVER_ERROR',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const HTTP_STATUS: Partial<Record<ErrorCode, number>> = {
  UNAUTHENTICATED: 401,
};

/** An error Tally raises on purpose: its message and extensions are for the client, in production too. */
export class CodedError extends GraphQLError {}

function coded(code: ErrorCode, message: string, extensions: Record<string, unknown> = {}): GraphQLError {
  const status = HTTP_STATUS[code];
  return new CodedError(message, {
    extensions: { code, ...extensions, ...(status ? { http: { status } } : {}) },
  });
}

export const badInput = (message: string, extensions?: Record<string, unknown>) => coded(ErrorCode.BAD_USER_INPUT, message, extensions);
export const unauthenticated = (message = 'authentication required') => coded(ErrorCode.UNAUTHENTICATED, message);
/** A valid token of a user whose erasure has started. */
export const accountErased = () => unauthenticated('this account was erased');
export const forbidden = (message: string) => coded(ErrorCode.FORBIDDEN, message);
export const notFound = (message: string) => coded(ErrorCode.NOT_FOUND, message);
export const conflict = (message: string) => coded(ErrorCode.CONFLICT, message);
/** `http` (status and headers, which Apollo sends and strips) when the whole request is refused. */
export const rateLimited = (message: string, retryAfterMs: number, http?: object) =>
  coded(ErrorCode.RATE_LIMITED, message, { retryAfterMs, ...(http ? { http } : {}) });
/** The service cannot do this right now but will soon (nothing changed): retry after the delay. */
export const unavailable = (message: string, retryAfterMs: number) => coded(ErrorCode.INTERNAL_SERVER_ERROR, message, { retryAfterMs });

/**
 * A change whose outcome is not known (Redis did not answer in time): it may or may not have
 * been applied, and will not be later. Retrying with the same idempotency key is safe and
 * answers what happened.
 */
export const outcomeUnknown = (message: string) =>
  coded(ErrorCode.INTERNAL_SERVER_ERROR, message, { retryable: true, outcome: 'UNKNOWN', retryAfterMs: 1000 });

const KNOWN = new Set<string>(Object.values(ErrorCode));

/**
 * A dependency that did not answer in time or dropped the connection (ioredis's and pg's own
 * words): nothing this request would change was decided (writes whose outcome is not known say
 * so themselves, with outcomeUnknown), so trying again is safe.
 */
const TRANSIENT =
  /Command timed out|Socket timeout|Connection is closed|Stream isn't writeable|max retries per request|Query read timeout|timeout exceeded when trying to connect|Connection terminated/i;
const isTransient = (cause: unknown) => cause instanceof Error && TRANSIENT.test(cause.message);

// Apollo's own codes for documents that do not parse or validate are bad input from the
// client's point of view; folding them keeps the set clients must handle closed.
const APOLLO_INPUT_CODES = new Set<string>([
  ApolloServerErrorCode.GRAPHQL_PARSE_FAILED,
  ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED,
  ApolloServerErrorCode.BAD_USER_INPUT,
  ApolloServerErrorCode.BAD_REQUEST,
  ApolloServerErrorCode.OPERATION_RESOLUTION_FAILURE,
]);

// Automatic persisted queries are a protocol: clients react to these two codes by sending
// the full query. They pass through as they are.
export const APQ_PROTOCOL_CODES = new Set<string>([
  ApolloServerErrorCode.PERSISTED_QUERY_NOT_FOUND,
  ApolloServerErrorCode.PERSISTED_QUERY_NOT_SUPPORTED,
]);

/** The HTTP status Apollo gave an error it raised itself (its APQ protocol errors carry 400, no code). */
const httpStatusOf = (error: unknown): number | undefined =>
  error instanceof GraphQLError ? (error.extensions?.http as { status?: number } | undefined)?.status : undefined;

/** graphql-js ends some messages with "Did you mean …?": a map of the schema for anyone probing it. */
const withoutSuggestions = (message: string) => message.replace(/\s*Did you mean [^?]*\?/g, '');

/**
 * Apollo `formatError`: keeps our codes, folds Apollo's input codes (and its code-less 4xx
 * errors) into BAD_USER_INPUT, and hides everything else behind INTERNAL_SERVER_ERROR so no
 * internals leak. Without `exposeDetails` (production) it also drops stack traces and
 * suggestions.
 */
export function formatError(
  formatted: GraphQLFormattedError,
  error: unknown,
  options: { exposeDetails: boolean; onInternal?: (error: unknown) => void },
): GraphQLFormattedError {
  const code = String(formatted.extensions?.code ?? '');
  const { stacktrace, ...rest } = formatted.extensions ?? {};
  const extensions = options.exposeDetails ? formatted.extensions : rest;
  const message = options.exposeDetails ? formatted.message : withoutSuggestions(formatted.message);
  const cause = unwrapResolverError(error);
  if (cause instanceof CodedError || (KNOWN.has(code) && code !== ErrorCode.INTERNAL_SERVER_ERROR) || APQ_PROTOCOL_CODES.has(code)) {
    return { ...formatted, message, extensions };
  }
  const status = httpStatusOf(cause);
  if (APOLLO_INPUT_CODES.has(code) || (status !== undefined && status >= 400 && status < 500)) {
    return { ...formatted, message, extensions: { ...extensions, code: ErrorCode.BAD_USER_INPUT } };
  }
  options.onInternal?.(cause);
  return {
    message: options.exposeDetails ? formatted.message : 'internal server error',
    locations: formatted.locations,
    path: formatted.path,
    extensions: {
      ...(options.exposeDetails ? extensions : {}),
      code: ErrorCode.INTERNAL_SERVER_ERROR,
      ...(isTransient(cause) ? { retryable: true, retryAfterMs: 1000 } : {}),
    },
  };
}
