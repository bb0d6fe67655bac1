/**
 * The database drivers are optional peer dependencies of the Effect 3 line: a missing one, or one of another line
 * (the registry's latest, Effect 4's `@effect/sql-pg@4`), is refused at start with the line that installs the right
 * one. The installed version is the function's argument here (what module resolution would find).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Database from "@mediagate/node/Database"
import { readFileSync } from "node:fs"
import satisfies from "semver/functions/satisfies.js"

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  readonly peerDependencies: Readonly<Record<string, string>>
  readonly peerDependenciesMeta: Readonly<Record<string, { readonly optional: boolean }>>
}

describe("database drivers", () => {
  for (const driver of Object.values(Database.drivers)) {
    describe(driver.name, () => {
      it("its range is @mediagate/node's optional peer dependency range", () => {
        assert.strictEqual(driver.range, manifest.peerDependencies[driver.name])
        assert.isTrue(manifest.peerDependenciesMeta[driver.name]?.optional)
      })

      it("its install line names a version of the range", () => {
        const match = /^npm install (\S+)@\^(\d+\.\d+)$/.exec(driver.install)
        assert.isNotNull(match)
        assert.strictEqual(match![1], driver.name)
        assert.isTrue(satisfies(`${match![2]}.0`, driver.range))
      })

      it("a missing driver is named with its install line", () => {
        assert.strictEqual(
          Database.driverProblem(driver, undefined),
          `the database driver ${driver.name} is not installed: ${driver.install} ` +
            "(with effect 3.22; the line of an older effect: docs/embedding.md#effect-versions)"
        )
      })

      it("an Effect 4 driver is refused with its version, the range and the install line", () => {
        const problem = Database.driverProblem(driver, "4.0.5")
        assert.strictEqual(
          problem,
          `the database driver ${driver.name} 4.0.5 is installed, but Mediagate works with ${driver.name} ` +
            `${driver.range} (Effect 3): ${driver.install} ` +
            "(with effect 3.22; the line of an older effect: docs/embedding.md#effect-versions)"
        )
      })

      it("versions below and above the range are refused, both ends of it are taken", () => {
        assert.isDefined(Database.driverProblem(driver, "0.44.9"))
        assert.isDefined(Database.driverProblem(driver, "0.54.0"))
        assert.isUndefined(Database.driverProblem(driver, "0.45.0"))
        assert.isUndefined(Database.driverProblem(driver, "0.53.0"))
      })
    })
  }
})
