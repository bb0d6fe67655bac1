/**
 * The build the end-to-end suites run against (`global-setup.ts` starts it): `built()` waits for it and fails with
 * its output when it failed.
 */
import { existsSync, readFileSync } from "node:fs"
import { inject } from "vitest"

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
