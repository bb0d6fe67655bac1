import { availableParallelism } from "node:os"
import { relative } from "node:path"
import { defineConfig } from "vitest/config"
import { BaseSequencer, type TestSpecification } from "vitest/node"
import { project } from "./vitest.shared.js"

/**
 * The files that take minutes (servers, npm installs, Chromium as child processes: mostly waiting) and the package
 * suites that take half a minute or more, started first and mixed so that the waiting ones run beside ones that
 * compute, then the others down to about 8 s, slowest first; the rest fill the gaps at the end. vitest orders by
 * the durations of the last run when it has them (a fresh clone has none), and otherwise by file size, which puts a
 * small file that runs a long suite (`channels-sqlite.test.ts`, `SqlEngine.test.ts`) last.
 */
const slowest = [
  "test/channels-postgres.test.ts",
  "test/channels-sqlite.test.ts",
  "test/consumer.test.ts",
  "test/transports-results-postgres.test.ts",
  "test/transports-results-sqlite.test.ts",
  "packages/dashboard/test/Browser.test.ts",
  "packages/engine/test/SqlStorage.test.ts",
  "test/client-sdk.test.ts",
  "packages/engine/test/MultiProcess.test.ts",
  "test/chaos-transports.test.ts",
  "packages/engine/test/ReadConnection.test.ts",
  "test/e2e.test.ts",
  "packages/engine/test/SqlEngine.test.ts",
  "test/chaos.test.ts",
  "packages/billing/test/SqlBilling.test.ts",
  // 8 to 30 s
  "packages/vendors/test/Media.test.ts",
  "test/transports.test.ts",
  "examples/server/test/Embedding.test.ts",
  "packages/billing/test/TablePrefix.test.ts",
  "test/cli-output.test.ts",
  "test/startup.test.ts",
  "packages/engine/test/TablePrefix.test.ts",
  "packages/node/test/FilePlacement.test.ts",
  "packages/vendors/test/SubmitRecovery.test.ts",
  "packages/node/test/Hardening.test.ts",
  "packages/accounts/test/SqlAccounts.test.ts",
  "packages/accounts/test/TablePrefix.test.ts",
  "packages/vendors/test/Simulated.test.ts",
  "test/transports-routing.test.ts",
  "packages/engine/test/NodeRegistry.test.ts",
  "packages/server/test/Property.test.ts",
  "packages/webhooks/test/Crash.test.ts",
  "test/ratelimit.test.ts",
  "packages/vendors/test/fakes/OpenAiFake.test.ts",
  "packages/engine/test/MemoryEngine.test.ts",
  "packages/node/test/Metrics.test.ts",
  "packages/engine/test/SqlStoragePostgres.test.ts",
  "packages/node/test/Operator.test.ts",
  "packages/node/test/Stack.test.ts"
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
 * Every suite runs in one project, in one pool of worker threads that do not isolate files: a worker imports Effect,
 * the sources and vitest's own runtime once for all the files it runs, where a process per file spent about 0.75 s of
 * CPU importing them again (more than most files take to run). `vitest.setup.ts` puts back what `@effect/vitest`
 * changes on the shared `it`, and the end-to-end suites claim their ports across workers (`test/server.ts`).
 *
 * The pool has three workers per core: the end-to-end files (servers, npm, Chromium as child processes) mostly
 * wait, and the package suites fill the cores meanwhile. It keeps its workers for the whole run (minimum =
 * maximum): vitest 3.2 stops idle workers of a pool that does not isolate while files are still queued
 * ("Terminating worker thread"). `VITEST_MAX_WORKERS` sets the count. One project, because vitest runs the projects
 * of a pool that does not isolate one after another, each to its last file. Each package's own `vitest.config.ts`
 * runs its suites alone, from its folder.
 */
const workers = Number(process.env["VITEST_MAX_WORKERS"] ?? Math.max(3, availableParallelism() * 3))

/**
 * The servers the end-to-end suites start inherit this environment: on PostgreSQL each of a server's two threads
 * opens a pool of 6 connections (not the default 10) and closes a connection unused for 2 s, so that the servers
 * of the files running beside each other stay well inside a fresh PostgreSQL's 100 connections (the suites need a
 * few at a time; at 10 a thread a run reached 96).
 */
process.env["MEDIAGATE_DB_MAX_CONNECTIONS"] ??= "6"
process.env["MEDIAGATE_DB_IDLE_TIMEOUT"] ??= "2s"

export default defineConfig({
  test: {
    projects: [
      project({
        test: {
          name: "mediagate",
          include: [
            "packages/!(testing)/test/**/*.test.ts",
            "examples/*/test/**/*.test.ts",
            "test/**/*.test.ts"
          ],
          // the end-to-end suites run the built packages and serve the built dashboard
          globalSetup: ["test/global-setup.ts", "packages/dashboard/test/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000
        }
      })
    ],
    maxWorkers: workers,
    minWorkers: workers,
    poolOptions: { threads: { isolate: false, maxThreads: workers, minThreads: workers } },
    sequence: { sequencer: SlowestFirst }
  }
})
