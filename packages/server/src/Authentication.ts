/**
 * Implementations of the contract's authentication middleware: API keys through the `KeyService` port, and the
 * operator token of `/admin/v1`.
 *
 * @since 0.1.0
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Errors, Security, Services, Tracing } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { createHash, timingSafeEqual } from "node:crypto"
import { makeTrustedProxies, resolveClientAddress, socketAddress } from "./ClientAddress.js"
import { RateLimiter } from "./RateLimit.js"
import * as RequestContext from "./RequestContext.js"
import { ServerConfig } from "./ServerConfig.js"

/**
 * API-key authentication: reads the raw header and the client address and asks the `KeyService`; then counts the
 * request against the key's and account's request rates (`RateLimit.ts`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Security.Authentication, never, Services.KeyService | ServerConfig | RateLimiter> =
  Layer.effect(
    Security.Authentication,
    Effect.gen(function*() {
      const keys = yield* Services.KeyService
      const config = yield* ServerConfig
      const limiter = yield* RateLimiter
      const trusted = makeTrustedProxies(config.trustedProxies)
      const span = Tracing.span("Authentication.bearer")
      const authenticate = (request: HttpServerRequest.HttpServerRequest) =>
        Effect.flatMap(
          keys.authenticate({
            authorization: request.headers["authorization"],
            clientAddress: resolveClientAddress(socketAddress(request), request.headers["x-forwarded-for"], trusted)
          }),
          (principal) => {
            // the account of the request's access-log line (RequestContext.ts)
            RequestContext.setAccount(request, principal.accountId)
            return limiter.request(principal)
          }
        )
      return {
        // the request's span (`http.server ...`, while tracing is on) names the account, never the key
        bearer: (_token) =>
          span(Effect.flatMap(HttpServerRequest.HttpServerRequest, authenticate)).pipe(
            Effect.tap((principal) => Tracing.annotate("mediagate.account_id", principal.accountId))
          )
      }
    })
  )

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

/**
 * Operator-token authentication of `/admin/v1`; without a configured token the admin API answers 404. Failed
 * attempts are counted per client address: past the limit every attempt from that address, right or wrong, is
 * answered `429 RATE_LIMITED` until the window ends (`RateLimit.ts`).
 *
 * @since 0.1.0
 * @category layers
 */
export const adminLayer: Layer.Layer<Security.AdminAuthentication, never, ServerConfig | RateLimiter> = Layer.effect(
  Security.AdminAuthentication,
  Effect.gen(function*() {
    const config = yield* ServerConfig
    const limiter = yield* RateLimiter
    const trusted = makeTrustedProxies(config.trustedProxies)
    const expected = Option.map(config.adminToken, (token) => digest(Redacted.value(token)))
    return {
      adminToken: (_token) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          if (Option.isNone(expected)) {
            return yield* new Errors.NotFound({
              message: `no route for ${request.method} ${request.url.split("?")[0]}`
            })
          }
          const address = resolveClientAddress(socketAddress(request), request.headers["x-forwarded-for"], trusted)
          yield* limiter.adminGate(address)
          const header = request.headers["authorization"]?.trim() ?? ""
          if (header === "") return yield* new Errors.AuthRequired({ message: "admin token required" })
          const match = /^Bearer\s+(\S+)$/i.exec(header)
          if (match === null || !timingSafeEqual(digest(match[1]!), expected.value)) {
            yield* limiter.adminFailure(address)
            return yield* new Errors.AuthInvalidToken({ message: "invalid admin token" })
          }
        })
    }
  })
)
