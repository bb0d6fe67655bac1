/**
 * A composed Mediagate (`Mediagate.make`: the production stack, simulated upstreams at 1/100 of their times) on a
 * real port, on SQLite or PostgreSQL (a fresh schema), with an admin token and private webhook targets allowed.
 */
import { Mediagate } from "@mediagate/node"
import * as Databases from "@mediagate/testing/databases"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { mkdtempSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** The admin token of the test servers. */
export const adminToken = "dashboard-test-admin-token-0123456789"

/** The databases to run on: SQLite always, PostgreSQL when it answers (always under CI). */
export const databases: ReadonlyArray<"sqlite" | "postgres"> = Databases.runPostgres
  ? ["sqlite", "postgres"]
  : ["sqlite"]

/** A running server. */
export interface Running {
  readonly baseUrl: string
  readonly mediagate: Mediagate.Handle
  readonly keys: { readonly account: string; readonly live: string; readonly test: string }
  readonly close: () => Promise<void>
}

/** Starts a server on `database`; `settings` adds environment-style settings (e.g. `MEDIAGATE_DASHBOARD`). */
export const start = async (
  database: "sqlite" | "postgres",
  settings: Readonly<Record<string, string>> = {}
): Promise<Running> => {
  const dataDir = mkdtempSync(join(tmpdir(), "mediagate-dashboard-"))
  const scope = Effect.runSync(Scope.make())
  const db = database === "sqlite"
    ? { sqlite: join(dataDir, "mediagate.db") }
    : { layer: await Effect.runPromise(Layer.memoize(Databases.postgres()).pipe(Scope.extend(scope))) }
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  const baseUrl = `http://127.0.0.1:${port}`
  const mediagate = Mediagate.make({
    database: db,
    dataDir,
    adminToken,
    publicBaseUrl: baseUrl,
    allowPrivateAddresses: true,
    settings: { MEDIAGATE_SIM_TIME_SCALE: "0.01", ...settings }
  })
  server.on("request", mediagate.handler)
  await mediagate.ready
  const created = await mediagate.bootstrap()
  if (created === undefined) throw new Error("bootstrap created no account")
  return {
    baseUrl,
    mediagate,
    keys: { account: created.account.id, live: created.live.key, test: created.test.key },
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await mediagate.close()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}
