#!/usr/bin/env node
/**
 * The `mediagate` command (see `Cli.ts`): `mediagate` runs the server, `mediagate accounts|keys ...` the admin
 * commands, all configured from the environment (docs/configuration.md). Its parser, `@effect/cli`, is an optional
 * peer dependency (embedding apps do not need it): without it the command stops with the line that installs it.
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { OptionalPackage } from "@mediagate/contract"
import * as Effect from "effect/Effect"
import * as Mediagate from "./Mediagate.js"
import * as Server from "./Server.js"

/** The command-line parser of the `mediagate` command. */
const cliPackage: OptionalPackage.Spec = { feature: "The mediagate command", name: "@effect/cli", range: "^0.77" }

Server.runMain(
  OptionalPackage.load(cliPackage, () => import("@effect/cli/Command")).pipe(
    Effect.zipRight(Effect.promise(() => import("./Cli.js"))),
    Effect.flatMap((Cli) => Effect.provide(Cli.run(process.argv), Cli.layerAdmin(Mediagate.layerAdminConfig))),
    Effect.provide(NodeContext.layer)
  )
)
