/**
 * Every error code of the API as a tagged error that carries its code and HTTP status, plus the wire form
 * (`{ success: false, error: { code, message } }`) that the HttpApi encodes and the derived client decodes.
 *
 * Handlers fail with the classes (`new TaskNotFound({ message })`); endpoints declare `TaskNotFound.Wire`.
 * This file is written out class by class on purpose: `Schema.TaggedError` needs a concrete `Self` per class.
 *
 * @since 0.1.0
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

/** The error envelope of every failed response. */
export const ErrorEnvelope = Schema.Struct({
  success: Schema.Literal(false),
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String
  })
}).annotations({ identifier: "ErrorEnvelope", description: "The envelope of every error response" })
/** The error envelope of every failed response. */
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/**
 * The envelope Schema of an error class: decodes `{ success: false, error: { code, message } }` into an instance and
 * encodes an instance into it; annotated with the class's HTTP status for HttpApi and OpenAPI.
 */
export const wire = <A extends { readonly message: string }, I, Code extends string>(
  errorClass: Schema.Schema<A, I> & { readonly code: Code; readonly status: number } & (new(props: {
    readonly message: string
  }) => A)
) =>
  Schema.transform(
    Schema.Struct({
      success: Schema.Literal(false),
      error: Schema.Struct({ code: Schema.Literal(errorClass.code), message: Schema.String })
    }),
    Schema.typeSchema(errorClass),
    {
      strict: true,
      decode: (envelope) => new errorClass({ message: envelope.error.message }),
      encode: (error) => ({ success: false as const, error: { code: errorClass.code, message: error.message } })
    }
  ).annotations(HttpApiSchema.annotations({ status: errorClass.status, identifier: errorClass.code }))

const fields = { message: Schema.String }

/** Invalid request parameters: body, query or path. `VALIDATION_ERROR`, HTTP 400. */
export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", fields) {
  static readonly code = "VALIDATION_ERROR" as const
  static readonly status = 400
  get code() {
    return ValidationError.code
  }
  get status() {
    return ValidationError.status
  }
}

/** The request body is larger than the configured limit. `PAYLOAD_TOO_LARGE`, HTTP 413. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", fields) {
  static readonly code = "PAYLOAD_TOO_LARGE" as const
  static readonly status = 413
  get code() {
    return PayloadTooLarge.code
  }
  get status() {
    return PayloadTooLarge.status
  }
}

/** No API key was sent. `AUTH_REQUIRED`, HTTP 401. */
export class AuthRequired extends Schema.TaggedError<AuthRequired>()("AuthRequired", fields) {
  static readonly code = "AUTH_REQUIRED" as const
  static readonly status = 401
  get code() {
    return AuthRequired.code
  }
  get status() {
    return AuthRequired.status
  }
}

/** The key is malformed or unknown. `AUTH_INVALID_TOKEN`, HTTP 401. */
export class AuthInvalidToken extends Schema.TaggedError<AuthInvalidToken>()("AuthInvalidToken", fields) {
  static readonly code = "AUTH_INVALID_TOKEN" as const
  static readonly status = 401
  get code() {
    return AuthInvalidToken.code
  }
  get status() {
    return AuthInvalidToken.status
  }
}

/** The key has expired. `AUTH_TOKEN_EXPIRED`, HTTP 401. */
export class AuthTokenExpired extends Schema.TaggedError<AuthTokenExpired>()("AuthTokenExpired", fields) {
  static readonly code = "AUTH_TOKEN_EXPIRED" as const
  static readonly status = 401
  get code() {
    return AuthTokenExpired.code
  }
  get status() {
    return AuthTokenExpired.status
  }
}

/** The key lacks a permission or a provider, or its IP whitelist refuses the client address. `KEY_PERMISSION_DENIED`, HTTP 403. */
export class KeyPermissionDenied extends Schema.TaggedError<KeyPermissionDenied>()("KeyPermissionDenied", fields) {
  static readonly code = "KEY_PERMISSION_DENIED" as const
  static readonly status = 403
  get code() {
    return KeyPermissionDenied.code
  }
  get status() {
    return KeyPermissionDenied.status
  }
}

/** The key was deleted. `KEY_REVOKED`, HTTP 403. */
export class KeyRevoked extends Schema.TaggedError<KeyRevoked>()("KeyRevoked", fields) {
  static readonly code = "KEY_REVOKED" as const
  static readonly status = 403
  get code() {
    return KeyRevoked.code
  }
  get status() {
    return KeyRevoked.status
  }
}

/** A prepaid balance does not cover the price. `INSUFFICIENT_BALANCE`, HTTP 402. */
export class InsufficientBalance extends Schema.TaggedError<InsufficientBalance>()("InsufficientBalance", fields) {
  static readonly code = "INSUFFICIENT_BALANCE" as const
  static readonly status = 402
  get code() {
    return InsufficientBalance.code
  }
  get status() {
    return InsufficientBalance.status
  }
}

/** The key's `spendLimit` or the account's `monthlySpendLimit` would be exceeded. `SPEND_LIMIT_EXCEEDED`, HTTP 402. */
export class SpendLimitExceeded extends Schema.TaggedError<SpendLimitExceeded>()("SpendLimitExceeded", fields) {
  static readonly code = "SPEND_LIMIT_EXCEEDED" as const
  static readonly status = 402
  get code() {
    return SpendLimitExceeded.code
  }
  get status() {
    return SpendLimitExceeded.status
  }
}

/** Unknown task id (or a task of another account). `TASK_NOT_FOUND`, HTTP 404. */
export class TaskNotFound extends Schema.TaggedError<TaskNotFound>()("TaskNotFound", fields) {
  static readonly code = "TASK_NOT_FOUND" as const
  static readonly status = 404
  get code() {
    return TaskNotFound.code
  }
  get status() {
    return TaskNotFound.status
  }
}

/** Unknown webhook id (or a webhook of another account). `WEBHOOK_NOT_FOUND`, HTTP 404. */
export class WebhookNotFound extends Schema.TaggedError<WebhookNotFound>()("WebhookNotFound", fields) {
  static readonly code = "WEBHOOK_NOT_FOUND" as const
  static readonly status = 404
  get code() {
    return WebhookNotFound.code
  }
  get status() {
    return WebhookNotFound.status
  }
}

/** Unknown API key id (or a key of another account). `API_KEY_NOT_FOUND`, HTTP 404. */
export class ApiKeyNotFound extends Schema.TaggedError<ApiKeyNotFound>()("ApiKeyNotFound", fields) {
  static readonly code = "API_KEY_NOT_FOUND" as const
  static readonly status = 404
  get code() {
    return ApiKeyNotFound.code
  }
  get status() {
    return ApiKeyNotFound.status
  }
}

/** Unknown delivery id. `DELIVERY_NOT_FOUND`, HTTP 404. */
export class DeliveryNotFound extends Schema.TaggedError<DeliveryNotFound>()("DeliveryNotFound", fields) {
  static readonly code = "DELIVERY_NOT_FOUND" as const
  static readonly status = 404
  get code() {
    return DeliveryNotFound.code
  }
  get status() {
    return DeliveryNotFound.status
  }
}

/** Unknown account id (admin API). `ACCOUNT_NOT_FOUND`, HTTP 404. */
export class AccountNotFound extends Schema.TaggedError<AccountNotFound>()("AccountNotFound", fields) {
  static readonly code = "ACCOUNT_NOT_FOUND" as const
  static readonly status = 404
  get code() {
    return AccountNotFound.code
  }
  get status() {
    return AccountNotFound.status
  }
}

/** No route matches the path, or a file URL is unknown. `NOT_FOUND`, HTTP 404. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {
  static readonly code = "NOT_FOUND" as const
  static readonly status = 404
  get code() {
    return NotFound.code
  }
  get status() {
    return NotFound.status
  }
}

/** The path exists, but not for this method. `METHOD_NOT_ALLOWED`, HTTP 405. */
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", fields) {
  static readonly code = "METHOD_NOT_ALLOWED" as const
  static readonly status = 405
  get code() {
    return MethodNotAllowed.code
  }
  get status() {
    return MethodNotAllowed.status
  }
}

/** Retry of a task that is not `failed` or `expired`. `TASK_NOT_RETRYABLE`, HTTP 409. */
export class TaskNotRetryable extends Schema.TaggedError<TaskNotRetryable>()("TaskNotRetryable", fields) {
  static readonly code = "TASK_NOT_RETRYABLE" as const
  static readonly status = 409
  get code() {
    return TaskNotRetryable.code
  }
  get status() {
    return TaskNotRetryable.status
  }
}

/** Cancel of a task that is not `pending` or `queued`. `TASK_NOT_CANCELLABLE`, HTTP 409. */
export class TaskNotCancellable extends Schema.TaggedError<TaskNotCancellable>()("TaskNotCancellable", fields) {
  static readonly code = "TASK_NOT_CANCELLABLE" as const
  static readonly status = 409
  get code() {
    return TaskNotCancellable.code
  }
  get status() {
    return TaskNotCancellable.status
  }
}

/** An `Idempotency-Key` reused with a different request. `IDEMPOTENCY_KEY_REUSED`, HTTP 409. */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", fields) {
  static readonly code = "IDEMPOTENCY_KEY_REUSED" as const
  static readonly status = 409
  get code() {
    return IdempotencyKeyReused.code
  }
  get status() {
    return IdempotencyKeyReused.status
  }
}

/** Too many requests; the response carries `Retry-After`. `RATE_LIMITED`, HTTP 429. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", fields) {
  static readonly code = "RATE_LIMITED" as const
  static readonly status = 429
  get code() {
    return RateLimited.code
  }
  get status() {
    return RateLimited.status
  }
}

/** An unexpected failure; the message never carries internals. `INTERNAL_ERROR`, HTTP 500. */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", fields) {
  static readonly code = "INTERNAL_ERROR" as const
  static readonly status = 500
  get code() {
    return InternalError.code
  }
  get status() {
    return InternalError.status
  }
}

/** An upstream failure surfaced synchronously (tasks carry `PROVIDER_ERROR` in their `error` instead). `PROVIDER_ERROR`, HTTP 502. */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", fields) {
  static readonly code = "PROVIDER_ERROR" as const
  static readonly status = 502
  get code() {
    return ProviderError.code
  }
  get status() {
    return ProviderError.status
  }
}

/** Storage is unreachable. `SERVICE_UNAVAILABLE`, HTTP 503. */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", fields) {
  static readonly code = "SERVICE_UNAVAILABLE" as const
  static readonly status = 503
  get code() {
    return ServiceUnavailable.code
  }
  get status() {
    return ServiceUnavailable.status
  }
}

/** A file URL whose signature is missing, invalid or expired. `FILE_ACCESS_DENIED`, HTTP 403. */
export class FileAccessDenied extends Schema.TaggedError<FileAccessDenied>()("FileAccessDenied", fields) {
  static readonly code = "FILE_ACCESS_DENIED" as const
  static readonly status = 403
  get code() {
    return FileAccessDenied.code
  }
  get status() {
    return FileAccessDenied.status
  }
}

/** A `Range` header that no byte of the file satisfies. `RANGE_NOT_SATISFIABLE`, HTTP 416. */
export class RangeNotSatisfiable extends Schema.TaggedError<RangeNotSatisfiable>()("RangeNotSatisfiable", fields) {
  static readonly code = "RANGE_NOT_SATISFIABLE" as const
  static readonly status = 416
  get code() {
    return RangeNotSatisfiable.code
  }
  get status() {
    return RangeNotSatisfiable.status
  }
}

/** Every API error class, for tables and tests. */
export const all = [
  ValidationError,
  PayloadTooLarge,
  AuthRequired,
  AuthInvalidToken,
  AuthTokenExpired,
  KeyPermissionDenied,
  KeyRevoked,
  InsufficientBalance,
  SpendLimitExceeded,
  TaskNotFound,
  WebhookNotFound,
  ApiKeyNotFound,
  DeliveryNotFound,
  AccountNotFound,
  NotFound,
  MethodNotAllowed,
  TaskNotRetryable,
  TaskNotCancellable,
  IdempotencyKeyReused,
  RateLimited,
  InternalError,
  ProviderError,
  ServiceUnavailable,
  FileAccessDenied,
  RangeNotSatisfiable
] as const

/** Any API error instance. */
export type AnyApiError = InstanceType<typeof all[number]>

/** Whether a value is an instance of one of the API error classes. */
export const isApiError = (u: unknown): u is AnyApiError => all.some((errorClass) => u instanceof errorClass)

/** Codes that appear inside a failed task's `error` (not as HTTP responses). */
export const taskErrorCodes = ["PROVIDER_ERROR", "INVALID_INPUT_MEDIA", "TASK_EXPIRED", "INTERNAL_ERROR"] as const
/** A code inside a failed task's `error`. */
export type TaskErrorCode = typeof taskErrorCodes[number]

/** The envelope Schemas of the errors endpoints declare (see {@link wire}). */
export const Wire = {
  ValidationError: wire(ValidationError),
  PayloadTooLarge: wire(PayloadTooLarge),
  AuthRequired: wire(AuthRequired),
  AuthInvalidToken: wire(AuthInvalidToken),
  AuthTokenExpired: wire(AuthTokenExpired),
  KeyPermissionDenied: wire(KeyPermissionDenied),
  KeyRevoked: wire(KeyRevoked),
  InsufficientBalance: wire(InsufficientBalance),
  SpendLimitExceeded: wire(SpendLimitExceeded),
  TaskNotFound: wire(TaskNotFound),
  WebhookNotFound: wire(WebhookNotFound),
  ApiKeyNotFound: wire(ApiKeyNotFound),
  DeliveryNotFound: wire(DeliveryNotFound),
  AccountNotFound: wire(AccountNotFound),
  NotFound: wire(NotFound),
  MethodNotAllowed: wire(MethodNotAllowed),
  TaskNotRetryable: wire(TaskNotRetryable),
  TaskNotCancellable: wire(TaskNotCancellable),
  IdempotencyKeyReused: wire(IdempotencyKeyReused),
  RateLimited: wire(RateLimited),
  InternalError: wire(InternalError),
  ProviderError: wire(ProviderError),
  ServiceUnavailable: wire(ServiceUnavailable),
  FileAccessDenied: wire(FileAccessDenied),
  RangeNotSatisfiable: wire(RangeNotSatisfiable)
} as const
