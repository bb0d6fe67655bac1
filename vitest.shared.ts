/**
 * What every vitest project of the repository shares: workspace packages resolve to their TypeScript sources
 * through the `@mediagate/source` export condition (published packages resolve to `dist/`), so the suites run
 * on a fresh clone without a build.
 */
import { fileURLToPath } from "node:url"
import { defaultServerConditions } from "vite"
import { defineProject, mergeConfig, type UserWorkspaceConfig } from "vitest/config"

/** The export condition that points workspace packages at their sources. */
export const sourceCondition = "@mediagate/source"

const conditions = [sourceCondition, ...defaultServerConditions]

/** What runs before each file of the shared pool (see the file). */
const setup = fileURLToPath(new URL("./vitest.setup.ts", import.meta.url))

/**
 * A vitest project resolving workspace packages to their sources. Its files run in worker threads that do not
 * isolate files (a worker imports Effect and the sources once for all the files it runs; see `vitest.config.ts`),
 * with `vitest.setup.ts` run before each.
 */
export const project = (config: UserWorkspaceConfig) =>
  defineProject(mergeConfig<UserWorkspaceConfig, UserWorkspaceConfig>({
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: [sourceCondition] } },
    test: { pool: "threads", setupFiles: [setup] }
  }, config))
