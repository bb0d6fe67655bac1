/**
 * The self-hosted Mediagate server.
 *
 * The HTTP layer and the contract exist; the task engine, billing, accounts and webhooks that it runs on are
 * built by the open issues. Until they land, starting the server says so and exits cleanly instead of serving an
 * API that could accept work it cannot run.
 */
import { NodeRuntime } from "@effect/platform-node"
import * as Console from "effect/Console"

const notYetComposed = Console.log(
  [
    "Mediagate: the example server is not yet composed.",
    "",
    "Available today: the API contract (@mediagate/contract) and the HTTP layer (@mediagate/server),",
    "exercised by `npm test`. The server starts here once the task engine, billing, accounts and",
    "webhook packages are in place (see docs/ and the open issues)."
  ].join("\n")
)

NodeRuntime.runMain(notYetComposed, { disableErrorReporting: false })
