#!/usr/bin/env node
/**
 * The `mediagate` command (see `Cli.ts`): `mediagate` runs the server, `mediagate accounts|keys ...` the admin
 * commands, all configured from the environment (docs/configuration.md).
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Cli from "./Cli.js"
import * as Mediagate from "./Mediagate.js"
import * as Server from "./Server.js"

Server.runMain(
  Cli.run(process.argv).pipe(
    Effect.provide(Cli.layerAdmin(Mediagate.layerAdminConfig)),
    Effect.provide(NodeContext.layer)
  )
)
