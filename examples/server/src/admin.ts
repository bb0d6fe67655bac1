/**
 * `npm run admin -- <command>`: the operator's command line on the server's database (same configuration as
 * the server: `DATABASE_URL` or `MEDIAGATE_DATA_DIR`).
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Cli from "./Cli.js"
import * as Database from "./Database.js"
import * as Stack from "./Stack.js"

const Admin = Layer.unwrapEffect(Effect.map(Database.location, (where) =>
  Stack.Accounts.pipe(Layer.provide(Database.layerOf(where)))))

Cli.run(process.argv).pipe(Effect.provide(Admin), Effect.provide(NodeContext.layer), NodeRuntime.runMain)
