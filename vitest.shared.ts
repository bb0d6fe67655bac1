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
 * A vitest project resolving workspace packages to their sources. Its files run in the shared pool (`threads`,
 * not isolated: a worker imports Effect and the sources once for all the files it runs; see `vitest.config.ts`),
 * unless `isolated`: then each file gets a process of its own (`forks`), for suites that start servers and
 * browsers or read state a previous file could leave in a module.
 */
export const project = (config: UserWorkspaceConfig, options: { readonly isolated?: boolean } = {}) =>
  defineProject(mergeConfig<UserWorkspaceConfig, UserWorkspaceConfig>({
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: [sourceCondition] } },
    test: options.isolated === true ? { pool: "forks" } : { pool: "threads", setupFiles: [setup] }
  }, config))
