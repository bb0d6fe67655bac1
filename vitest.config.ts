import { availableParallelism } from "node:os"
import { relative } from "node:path"
import { defineConfig } from "vitest/config"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/**
 * The files that take minutes (end-to-end runs of server processes, npm installs, Chromium), started first so that
 * the run does not end waiting on one of them alone, then those that take 10 to 30 s, slowest first. vitest orders by
 * the durations of the last run when it has them (a fresh clone has none), and otherwise by file size, which puts a
 * small file that runs a long suite (`channels-sqlite.test.ts`, `SqlEngine.test.ts`) last.
 */
const slowest = [
  "test/channels-postgres.test.ts",
  "test/channels-sqlite.test.ts",
  "test/transports-results.test.ts",
  "packages/dashboard/test/Browser.test.ts",
  "test/consumer.test.ts",
  "test/client-sdk.test.ts",
  "test/chaos-transports.test.ts",
  // 10 to 30 s
  "packages/engine/test/SqlStorage.test.ts",
  "packages/engine/test/MultiProcess.test.ts",
  "packages/engine/test/ReadConnection.test.ts",
  "test/chaos.test.ts",
  "test/e2e.test.ts",
  "test/transports.test.ts",
  "packages/engine/test/SqlEngine.test.ts",
  "packages/billing/test/TablePrefix.test.ts",
  "examples/server/test/Embedding.test.ts",
  "packages/node/test/FilePlacement.test.ts",
  "packages/vendors/test/SubmitRecovery.test.ts",
  "packages/engine/test/TablePrefix.test.ts",
  "packages/accounts/test/TablePrefix.test.ts",
  "packages/vendors/test/Media.test.ts",
  "packages/billing/test/SqlBilling.test.ts",
  "test/cli-output.test.ts",
  "test/transports-routing.test.ts"
]

class SlowestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const rank = (file: TestSpecification) => {
      const index = slowest.indexOf(relative(import.meta.dirname, file.moduleId).replaceAll("\\", "/"))
      return index === -1 ? slowest.length : index
    }
    return sorted.map((file, order) => ({ file, order })).sort((a, b) =>
      rank(a.file) - rank(b.file) || a.order - b.order
    ).map(({ file }) => file)
  }
}

export default defineConfig({
  test: {
    projects: ["packages/*", "!packages/testing", "examples/*", "test"],
    // Most suites wait on servers, databases, child processes and timers more than they compute: one worker more
    // than the cores keeps them busy (vitest's default is one fewer than the cores: a single worker on two cores).
    // Two per core was faster still, but loaded the machine so that end-to-end waits ran out. `VITEST_MAX_WORKERS`
    // overrides it.
    maxWorkers: Number(process.env["VITEST_MAX_WORKERS"] ?? Math.max(2, availableParallelism() + 1)),
    sequence: { sequencer: SlowestFirst }
  }
})
