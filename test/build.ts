/**
 * The build the end-to-end suites run against (`global-setup.ts` starts it): `built()` waits for it and fails with
 * its output when it failed.
 */
import { existsSync, readFileSync } from "node:fs"
import { beforeAll, inject } from "vitest"

/** What the global setup provides: the path of the build's status file. */
declare module "vitest" {
  export interface ProvidedContext {
    readonly mediagateBuild: string
  }
}

/** Waits until `tsc -b tsconfig.build.json` has finished; fails with its output when it failed. */
export const built = async (): Promise<void> => {
  const status = inject("mediagateBuild")
  while (!existsSync(status)) await new Promise((resolve) => setTimeout(resolve, 100))
  const { code, output } = JSON.parse(readFileSync(status, "utf8")) as { code: number | null; output: string }
  if (code !== 0) throw new Error(`npm run build failed:\n${output}`)
}

/**
 * Waits for the build in a hook of the file's own, before its other hooks and tests: the build shares the cores with
 * the suites that run meanwhile and takes minutes on a slow or busy machine, which no test's timeout should count.
 * Called at the top level of each file that runs the build (directly or through a helper that registers its suites).
 */
export const awaitBuild = () => beforeAll(built, 1_800_000)
