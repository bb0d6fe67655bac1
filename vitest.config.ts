import { availableParallelism } from "node:os"
import { relative } from "node:path"
import { defineConfig } from "vitest/config"
import { BaseSequencer, type TestSpecification } from "vitest/node"
import { project } from "./vitest.shared.js"

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

/**
 * Two pools run side by side (`vitest.shared.ts` puts each project in one):
 * - `forks`, each file in a process of its own: the end-to-end suites (`test/`), the dashboard's and the example
 *   server's, which start servers, child processes and Chromium and mostly wait on them;
 * - `threads`, not isolated: the package suites. A worker imports Effect and the sources once for every file it
 *   runs, where a process per file spent about 0.75 s of CPU importing them again (more than most of these files
 *   take to run). `vitest.setup.ts` puts back what `@effect/vitest` changes on the shared `it`.
 *
 * Each pool keeps its workers for the whole run (minimum = maximum): vitest 3.2 stops idle workers of a pool that
 * does not isolate while files are still queued ("Terminating worker thread"). `forks` has one worker more than the
 * cores (its files wait more than they compute), `threads` one fewer than that; `VITEST_MAX_WORKERS` sets the first.
 */
const workers = Number(process.env["VITEST_MAX_WORKERS"] ?? Math.max(2, availableParallelism() + 1))

export default defineConfig({
  test: {
    projects: [
      // the package suites as one project: vitest runs the projects of a pool that does not isolate one after
      // another, each to its last file, so per-package projects left workers idle at every package's end (each
      // package's own vitest.config.ts runs its suites alone, from its folder)
      project({
        test: {
          name: "packages",
          include: [
            "packages/!(dashboard|testing)/test/**/*.test.ts",
            "examples/webhook-receiver/test/**/*.test.ts"
          ],
          testTimeout: 60_000
        }
      }),
      "packages/dashboard",
      "examples/server",
      "test"
    ],
    maxWorkers: workers,
    minWorkers: workers,
    poolOptions: {
      forks: { isolate: true, maxForks: workers, minForks: workers },
      threads: { isolate: false, maxThreads: Math.max(1, workers - 1), minThreads: Math.max(1, workers - 1) }
    },
    sequence: { sequencer: SlowestFirst }
  }
})
