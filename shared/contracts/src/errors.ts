/** The one error catalogue (docs/vendor-api.md, "Envelopes and errors"; docs/user-api.md, "Errors at a glance"). Nothing else may appear as an error code on the wire. */
export const ERROR_CODES = {
  INVALID_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export const DEFAULT_MESSAGES: Record<ErrorCode, string> = {
  INVALID_REQUEST: 'The request format or parameters are invalid',
  UNAUTHORIZED: 'Missing or invalid credentials',
  FORBIDDEN: 'Insufficient permissions',
  NOT_FOUND: 'Resource not found',
  RATE_LIMITED: 'Too many requests',
  INTERNAL_ERROR: 'Internal server error',
};

export interface ErrorDetails {
  field?: string;
  reason?: string;
  [key: string]: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message?: string, details: ErrorDetails = {}) {
    super(message ?? DEFAULT_MESSAGES[code]);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_CODES[this.code];
  }

  static invalid(field: string, reason: string, message?: string): AppError {
    return new AppError('INVALID_REQUEST', message ?? `Invalid ${field}: ${reason}`, { field, reason });
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}
