/**
 * What every vitest project of the repository shares: workspace packages resolve to their TypeScript sources
 * through the `@mediagate/source` export condition (published packages resolve to `dist/`), so the suites run
 * on a fresh clone without a build.
 */
import { defaultServerConditions } from "vite"
import { defineProject, mergeConfig, type UserWorkspaceConfig } from "vitest/config"

/** The export condition that points workspace packages at their sources. */
export const sourceCondition = "@mediagate/source"

const conditions = [sourceCondition, ...defaultServerConditions]

/** A vitest project resolving workspace packages to their sources. */
export const project = (config: UserWorkspaceConfig) =>
  defineProject(mergeConfig<UserWorkspaceConfig, UserWorkspaceConfig>({
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: [sourceCondition] } }
  }, config))
