/**
 * Every error code of the API as a tagged error that carries its code and HTTP status, plus the wire form
 * (`{ success: false, error: { code, message, request_id? } }`) that the HttpApi encodes and the derived client
 * decodes. The server's envelope middleware writes `request_id` (the request's id) into every error it answers.
 *
 * Handlers fail with the classes (`new TaskNotFound({ message })`); endpoints declare `wire(TaskNotFound)`.
 * Every class comes from one factory, {@link ApiError}, which keeps a concrete `Self` per class (as
 * `HttpApiSchema.EmptyError` does).
 *
 * @since 0.1.0
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

/**
 * The request id in error envelopes (`error.request_id`): the server's id of the request, also in its
 * `X-Request-Id` answer header and its log lines. Optional: an envelope without it is valid (the spec's envelope).
 *
 * @since 0.1.0
 * @category schemas
 */
export const RequestId = Schema.optional(Schema.String.annotations({
  description: "The id of the request (its X-Request-Id answer header): quote it when reporting a problem"
}))

/**
 * The error envelope of every failed response.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorEnvelope = Schema.Struct({
  success: Schema.Literal(false),
  error: Schema.Struct({
    code: Schema.String,
    message: Schema.String,
    request_id: RequestId
  })
}).annotations({ identifier: "ErrorEnvelope", description: "The envelope of every error response" })
/**
 * The error envelope of every failed response.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/** Marks the instances of API errors. */
const ApiErrorTypeId: unique symbol = Symbol.for("@mediagate/contract/Errors/ApiError")

/** The fields of every API error: the message, and the code and status (filled in by the class). */
type ApiErrorFields<Code extends string, Status extends number> = {
  readonly message: typeof Schema.String
  readonly code: Schema.optionalWith<Schema.Literal<[Code]>, { default: () => Code }>
  readonly status: Schema.optionalWith<Schema.Literal<[Status]>, { default: () => Status }>
}

/**
 * The envelope Schema of an API error: `{ success: false, error: { code, message } }` on the wire.
 *
 * @since 0.1.0
 * @category models
 */
export type WireSchema<A, Code extends string> = Schema.transform<
  Schema.Struct<{
    success: Schema.Literal<[false]>
    error: Schema.Struct<{ code: Schema.Literal<[Code]>; message: typeof Schema.String; request_id: typeof RequestId }>
  }>,
  Schema.SchemaClass<A>
>

/**
 * The class side of an API error: a tagged error Schema with its code, HTTP status and envelope Schema.
 *
 * @since 0.1.0
 * @category models
 */
export interface ApiErrorClass<Self, Tag extends string, Code extends string, Status extends number>
  extends Schema.TaggedErrorClass<Self, Tag, { readonly _tag: Schema.tag<Tag> } & ApiErrorFields<Code, Status>>
{
  readonly code: Code
  readonly status: Status
  /**
   * The envelope Schema endpoints declare (`.addError(TaskNotFound.wire)`): decodes the envelope into an instance
   * and encodes an instance into it, annotated with the status for HttpApi and OpenAPI. One per class.
   */
  readonly wire: WireSchema<Self, Code>
}

/** What the envelope Schema of a class needs of it. */
type WireSource<Self, Code extends string> = Schema.Schema<Self, any> & {
  readonly code: Code
  readonly status: number
  new(props: { readonly message: string }): unknown
}

const makeWire = <Self, Code extends string>(errorClass: WireSource<Self, Code>): WireSchema<Self, Code> => {
  const instance = Schema.validateSync(errorClass)
  return Schema.transform(
    Schema.Struct({
      success: Schema.Literal(false),
      error: Schema.Struct({ code: Schema.Literal(errorClass.code), message: Schema.String, request_id: RequestId })
    }),
    Schema.typeSchema(errorClass),
    {
      strict: true,
      decode: (envelope) => instance(new errorClass({ message: envelope.error.message })),
      encode: (_, error) => ({ success: false as const, error: { code: errorClass.code, message: messageOf(error) } })
    }
  ).annotations(HttpApiSchema.annotations({ status: errorClass.status, identifier: errorClass.code }))
}

const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : ""

/**
 * Makes an API error class: `class TaskNotFound extends ApiError<TaskNotFound>()("TaskNotFound",
 * "TASK_NOT_FOUND", 404) {}`. Instances carry `code` and `status` too and are told apart by {@link isApiError};
 * the class carries its envelope Schema as `wire`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ApiError = <Self>() =>
<const Tag extends string, const Code extends string, const Status extends number>(
  tag: Tag,
  code: Code,
  status: Status
): ApiErrorClass<Self, Tag, Code, Status> => {
  const fields: ApiErrorFields<Code, Status> = {
    message: Schema.String,
    code: Schema.optionalWith(Schema.Literal(code), { default: () => code }),
    status: Schema.optionalWith(Schema.Literal(status), { default: () => status })
  }
  // `Schema.TaggedError<Self>()` is a conditional type while `Self` is generic (as in HttpApiSchema.EmptyError)
  const Base: Schema.TaggedErrorClass<Self, Tag, { readonly _tag: Schema.tag<Tag> } & ApiErrorFields<Code, Status>> =
    Schema.TaggedError<any>()(tag, fields)
  let wire: WireSchema<Self, Code> | undefined
  class Made extends Base {
    static readonly code = code
    static readonly status = status
    /** Made on first use, from the class it is read on (the subclass endpoints and handlers use). */
    static get wire(): WireSchema<Self, Code> {
      return wire ??= makeWire(this)
    }
  }
  Object.defineProperty(Made.prototype, ApiErrorTypeId, { value: ApiErrorTypeId })
  return Made
}

/**
 * Invalid request parameters: body, query or path. `VALIDATION_ERROR`, HTTP 400.
 *
 * @since 0.1.0
 * @category errors
 */
export class ValidationError extends ApiError<ValidationError>()("ValidationError", "VALIDATION_ERROR", 400) {}

/**
 * The request body is larger than the configured limit. `PAYLOAD_TOO_LARGE`, HTTP 413.
 *
 * @since 0.1.0
 * @category errors
 */
export class PayloadTooLarge extends ApiError<PayloadTooLarge>()("PayloadTooLarge", "PAYLOAD_TOO_LARGE", 413) {}

/**
 * No API key was sent. `AUTH_REQUIRED`, HTTP 401.
 *
 * @since 0.1.0
 * @category errors
 */
export class AuthRequired extends ApiError<AuthRequired>()("AuthRequired", "AUTH_REQUIRED", 401) {}

/**
 * The key is malformed or unknown. `AUTH_INVALID_TOKEN`, HTTP 401.
 *
 * @since 0.1.0
 * @category errors
 */
export class AuthInvalidToken extends ApiError<AuthInvalidToken>()("AuthInvalidToken", "AUTH_INVALID_TOKEN", 401) {}

/**
 * The key has expired. `AUTH_TOKEN_EXPIRED`, HTTP 401.
 *
 * @since 0.1.0
 * @category errors
 */
export class AuthTokenExpired extends ApiError<AuthTokenExpired>()("AuthTokenExpired", "AUTH_TOKEN_EXPIRED", 401) {}

/**
 * The key lacks a permission or a provider, or its IP whitelist refuses the client address. `KEY_PERMISSION_DENIED`,
 * HTTP 403.
 *
 * @since 0.1.0
 * @category errors
 */
export class KeyPermissionDenied
  extends ApiError<KeyPermissionDenied>()("KeyPermissionDenied", "KEY_PERMISSION_DENIED", 403)
{}

/**
 * The key was deleted. `KEY_REVOKED`, HTTP 403.
 *
 * @since 0.1.0
 * @category errors
 */
export class KeyRevoked extends ApiError<KeyRevoked>()("KeyRevoked", "KEY_REVOKED", 403) {}

/**
 * A prepaid balance does not cover the price. `INSUFFICIENT_BALANCE`, HTTP 402.
 *
 * @since 0.1.0
 * @category errors
 */
export class InsufficientBalance
  extends ApiError<InsufficientBalance>()("InsufficientBalance", "INSUFFICIENT_BALANCE", 402)
{}

/**
 * The key's `spendLimit` or the account's `monthlySpendLimit` would be exceeded. `SPEND_LIMIT_EXCEEDED`, HTTP 402.
 *
 * @since 0.1.0
 * @category errors
 */
export class SpendLimitExceeded
  extends ApiError<SpendLimitExceeded>()("SpendLimitExceeded", "SPEND_LIMIT_EXCEEDED", 402)
{}

/**
 * Unknown task id (or a task of another account). `TASK_NOT_FOUND`, HTTP 404.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskNotFound extends ApiError<TaskNotFound>()("TaskNotFound", "TASK_NOT_FOUND", 404) {}

/**
 * Unknown webhook id (or a webhook of another account). `WEBHOOK_NOT_FOUND`, HTTP 404.
 *
 * @since 0.1.0
 * @category errors
 */
export class WebhookNotFound extends ApiError<WebhookNotFound>()("WebhookNotFound", "WEBHOOK_NOT_FOUND", 404) {}

/**
 * Unknown API key id (or a key of another account). `API_KEY_NOT_FOUND`, HTTP 404.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApiKeyNotFound extends ApiError<ApiKeyNotFound>()("ApiKeyNotFound", "API_KEY_NOT_FOUND", 404) {}

/**
 * Unknown delivery id. `DELIVERY_NOT_FOUND`, HTTP 404.
 *
 * @since 0.1.0
 * @category errors
 */
export class DeliveryNotFound extends ApiError<DeliveryNotFound>()("DeliveryNotFound", "DELIVERY_NOT_FOUND", 404) {}

/**
 * Unknown account id (admin API). `ACCOUNT_NOT_FOUND`, HTTP 404.
 *
 * @since 0.1.0
 * @category errors
 */
export class AccountNotFound extends ApiError<AccountNotFound>()("AccountNotFound", "ACCOUNT_NOT_FOUND", 404) {}

/**
 * Unknown channel id (admin API). `CHANNEL_NOT_FOUND`, HTTP 404.
 *
 * @since 0.1.0
 * @category errors
 */
export class ChannelNotFound extends ApiError<ChannelNotFound>()("ChannelNotFound", "CHANNEL_NOT_FOUND", 404) {}

/**
 * Delete of a channel that still has tasks in flight (disable it and wait). `CHANNEL_IN_USE`, HTTP 409.
 *
 * @since 0.1.0
 * @category errors
 */
export class ChannelInUse extends ApiError<ChannelInUse>()("ChannelInUse", "CHANNEL_IN_USE", 409) {}

/**
 * No route matches the path, or a file URL is unknown. `NOT_FOUND`, HTTP 404.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends ApiError<NotFound>()("NotFound", "NOT_FOUND", 404) {}

/**
 * The path exists, but not for this method. `METHOD_NOT_ALLOWED`, HTTP 405.
 *
 * @since 0.1.0
 * @category errors
 */
export class MethodNotAllowed extends ApiError<MethodNotAllowed>()("MethodNotAllowed", "METHOD_NOT_ALLOWED", 405) {}

/**
 * Retry of a task that is not `failed` or `expired`. `TASK_NOT_RETRYABLE`, HTTP 409.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskNotRetryable extends ApiError<TaskNotRetryable>()("TaskNotRetryable", "TASK_NOT_RETRYABLE", 409) {}

/**
 * Cancel of a task that is not `pending` or `queued`. `TASK_NOT_CANCELLABLE`, HTTP 409.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskNotCancellable
  extends ApiError<TaskNotCancellable>()("TaskNotCancellable", "TASK_NOT_CANCELLABLE", 409)
{}

/**
 * An `Idempotency-Key` reused with a different request. `IDEMPOTENCY_KEY_REUSED`, HTTP 409.
 *
 * @since 0.1.0
 * @category errors
 */
export class IdempotencyKeyReused
  extends ApiError<IdempotencyKeyReused>()("IdempotencyKeyReused", "IDEMPOTENCY_KEY_REUSED", 409)
{}

/**
 * Too many requests; the response carries `Retry-After`. `RATE_LIMITED`, HTTP 429.
 *
 * @since 0.1.0
 * @category errors
 */
export class RateLimited extends ApiError<RateLimited>()("RateLimited", "RATE_LIMITED", 429) {}

/**
 * An unexpected failure; the message never carries internals. `INTERNAL_ERROR`, HTTP 500.
 *
 * @since 0.1.0
 * @category errors
 */
export class InternalError extends ApiError<InternalError>()("InternalError", "INTERNAL_ERROR", 500) {}

/**
 * An upstream failure surfaced synchronously (tasks carry `PROVIDER_ERROR` in their `error` instead). `PROVIDER_ERROR`,
 * HTTP 502.
 *
 * @since 0.1.0
 * @category errors
 */
export class ProviderError extends ApiError<ProviderError>()("ProviderError", "PROVIDER_ERROR", 502) {}

/**
 * Storage is unreachable. `SERVICE_UNAVAILABLE`, HTTP 503.
 *
 * @since 0.1.0
 * @category errors
 */
export class ServiceUnavailable
  extends ApiError<ServiceUnavailable>()("ServiceUnavailable", "SERVICE_UNAVAILABLE", 503)
{}

/**
 * A file URL whose signature is missing, invalid or expired. `FILE_ACCESS_DENIED`, HTTP 403.
 *
 * @since 0.1.0
 * @category errors
 */
export class FileAccessDenied extends ApiError<FileAccessDenied>()("FileAccessDenied", "FILE_ACCESS_DENIED", 403) {}

/**
 * A `Range` header that no byte of the file satisfies. `RANGE_NOT_SATISFIABLE`, HTTP 416.
 *
 * @since 0.1.0
 * @category errors
 */
export class RangeNotSatisfiable
  extends ApiError<RangeNotSatisfiable>()("RangeNotSatisfiable", "RANGE_NOT_SATISFIABLE", 416)
{
  /**
   * The file's size in bytes when known, for the 416 answer's `Content-Range` (its unsatisfied-range form, RFC 9110
   * §14.4).
   *
   * @since 0.1.0
   */
  declare readonly size?: number
  /**
   * The error for a file of `size` bytes.
   *
   * @since 0.1.0
   */
  static ofSize(message: string, size: number): RangeNotSatisfiable {
    return Object.assign(new RangeNotSatisfiable({ message }), { size })
  }
}

/**
 * Every API error class, for tables and tests.
 *
 * @since 0.1.0
 * @category errors
 */
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

/**
 * Any API error instance.
 *
 * @since 0.1.0
 * @category errors
 */
export type AnyApiError = InstanceType<typeof all[number]>

/**
 * Whether a value is an instance of one of the API error classes.
 *
 * @since 0.1.0
 * @category guards
 */
export const isApiError = (u: unknown): u is AnyApiError => typeof u === "object" && u !== null && ApiErrorTypeId in u
