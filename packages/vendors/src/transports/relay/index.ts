/**
 * `relay`: another service speaking this same `/api/v1` (`Relay.ts`). It needs the other service's base URL and API
 * key; the task's key `<task>.<channel>` goes as the `Idempotency-Key`, so a repeated submit finds its job there.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Relay from "../../Relay.js"
import { ResultCopier } from "../../ResultCopy.js"
import * as Transport from "../../Transport.js"

/**
 * The relay transport.
 *
 * @since 0.1.0
 * @category transports
 */
export const relay = Transport.make({
  name: "relay",
  summary: "another service speaking this API",
  baseUrl: "required",
  apiKey: "required",
  mapping: true,
  workflows: false,
  callbacks: false,
  submitRecovery: "idempotency-key",
  build: ({ channel, copier, policy }) =>
    Effect.suspend(() => {
      const { baseUrl, maxResultBytes, resultHosts, timeoutMs } = channel.settings
      const { apiKey } = channel.credentials
      if (baseUrl === undefined || apiKey === undefined) return Effect.succeed(Option.none<Transport.Built>())
      return Relay.make({
        baseUrl,
        apiKey,
        allowPrivate: policy.allowPrivate,
        ...(timeoutMs === undefined ? {} : { timeout: Duration.millis(timeoutMs) }),
        ...(resultHosts === undefined ? {} : { resultHosts }),
        ...(maxResultBytes === undefined ? {} : { maxFileBytes: maxResultBytes })
      }).pipe(
        Effect.provideService(ResultCopier, copier),
        Effect.map((upstream) => Option.some<Transport.Built>({ upstream }))
      )
    })
})
