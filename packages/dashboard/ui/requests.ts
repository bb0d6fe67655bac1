/**
 * What the views need of a request without the typed client: its failure in words ({@link toFailure}) and a fresh
 * `Idempotency-Key` per intent. No Effect or contract code (the sign-in form uses it before the client loads).
 */

let parseErrorMessage: ((error: unknown) => string) | undefined

/** How a contract Schema's refusal of a form value reads (set by the typed client's module, `api.ts`). */
export const setParseErrorMessage = (f: (error: unknown) => string): void => {
  parseErrorMessage = f
}

/** Fired when the server refuses a credential (401): the app signs out of that kind. */
export const onUnauthorized = new EventTarget()

/** An API failure as the views show it. */
export class ApiFailure extends Error {
  constructor(message: string, readonly code: string, readonly status: number | undefined) {
    super(message)
  }
}

const hasString = (value: unknown, key: string): value is Record<string, string> =>
  typeof value === "object" && value !== null && typeof (value as Record<string, unknown>)[key] === "string"

/** What went wrong, in words: the API's envelope when there is one, else the transport's. */
export const toFailure = (error: unknown): ApiFailure => {
  if (error instanceof ApiFailure) return error
  if (hasString(error, "code") && hasString(error, "message")) {
    const status = (error as { status?: unknown }).status
    return new ApiFailure(error.message, error.code, typeof status === "number" ? status : undefined)
  }
  // a form's value refused by the contract's Schema before it was sent: the message the API gives for it (the
  // formatter comes with the typed client, api.ts: without the client no value is decoded)
  if (hasString(error, "_tag") && error._tag === "ParseError" && parseErrorMessage !== undefined) {
    return new ApiFailure(parseErrorMessage(error), "VALIDATION_ERROR", undefined)
  }
  if (hasString(error, "_tag") && error._tag === "ResponseError") {
    const response = (error as unknown as { response: { status: number } }).response
    return new ApiFailure(`The server answered ${response.status}`, "HTTP_ERROR", response.status)
  }
  if (hasString(error, "_tag") && error._tag === "RequestError") {
    return new ApiFailure("The server cannot be reached", "NETWORK_ERROR", undefined)
  }
  return new ApiFailure(error instanceof Error ? error.message : String(error), "UNKNOWN", undefined)
}

/**
 * Whether a request's answer was lost on the way (the network failed, or no answer in time): the server may have
 * done it, so the next attempt of the same intent sends the same `Idempotency-Key`.
 */
export const answerLost = (failure: ApiFailure): boolean =>
  failure.code === "NETWORK_ERROR" || failure.code === "TIMEOUT"

/**
 * A fresh `Idempotency-Key` for one intent (`useSubmit` keeps it for the intent's attempts): a random UUID, from
 * `crypto.getRandomValues` where `crypto.randomUUID` is missing (a page served over plain HTTP, not from localhost).
 */
export const idempotencyKey = (): string => {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID()
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
