/**
 * The production server for the HTTP tests of this package: a `Mediagate.layer` served by `Server.listen` on a free
 * port of 127.0.0.1 until the test file ends, and a JSON call to it.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { afterAll } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Mediagate from "../src/Mediagate.js"
import * as Server from "../src/Server.js"

/** The stack with `options`, served on a free port until the scope closes: its port. */
export const serveScoped = (options: Mediagate.Options) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Mediagate.layer(options))
    const service = Context.get(context, Mediagate.Mediagate)
    const handler = yield* NodeHttpServer.makeHandler(service.httpApp)
    const server = yield* Server.listen(handler, { port: 0, host: "127.0.0.1", shutdownGrace: "1 second" })
    return (server.address() as { port: number }).port
  })

/** A `serve` whose servers close when the calling test file ends (call it at the file's top level). */
export const servedStacks = () => {
  const scopes: Array<Scope.CloseableScope> = []
  afterAll(() => Effect.runPromise(Effect.forEach(scopes.reverse(), (scope) => Scope.close(scope, Exit.void))))
  /** The stack with `options`, served on a free port: its port. */
  return (options: Mediagate.Options) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      scopes.push(scope)
      return yield* Scope.extend(serveScoped(options), scope)
    })
}

/** An answer of the API: its status and envelope. */
export interface Answer {
  readonly status: number
  readonly body: {
    readonly success: boolean
    readonly data?: any
    readonly pagination?: { readonly total: number }
    readonly error?: { readonly code: string; readonly message: string }
  }
}

/** A call with a bearer token and an optional JSON body. */
export const call = (base: string, method: string, path: string, token: string, body?: unknown) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(base + path, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, body: await response.json() }
  })
