/**
 * The self-hosted Mediagate server: `@mediagate/node`'s production server, configured from the environment
 * (docs/configuration.md). SQLite in `./data` by default, PostgreSQL with `DATABASE_URL`. On first start with an
 * empty database and no admin token it creates a first account with a live and a test key and prints them once.
 * SIGINT/SIGTERM stop it gracefully.
 */
import { Server } from "@mediagate/node"

Server.main()
