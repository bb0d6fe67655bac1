/**
 * The weight of Mediagate in an app, measured from outside: the size of `node_modules` and the time to import
 * `@mediagate/node`, against a bare app with the same Effect packages, driver and Express, installed the same way
 * in the same run (docs/performance.md "Install size and import time").
 *
 * 1. Every publishable package is packed (`npm pack --workspace=... --ignore-scripts`: the build `npm run build`
 *    made, not rebuilt per package).
 * 2. The **Mediagate app** (in a temporary folder outside the repository) depends on the tarballs, the SQLite
 *    driver (`@effect/sql-sqlite-node`) and `express`; `npm install` adds the required peers (`effect`, `@effect/*`).
 * 3. The **bare app** depends on the same versions (read from the Mediagate app's install) of `effect`,
 *    `@effect/platform`, `@effect/platform-node`, `@effect/sql`, `@effect/sql-sqlite-node` and `express`.
 * 4. Size: `du -sk node_modules` of each (disk usage, as a user would see it), and the packages only the
 *    Mediagate app has, largest first.
 * 5. Import time: a fresh `node` per run, timing `await import("@mediagate/node")` in the Mediagate app and the
 *    `import()` of every bare package's entry point in the bare app (node's own start excluded); `--runs` runs each
 *    (default 9), interleaved, after one warm-up each; medians.
 *
 * Prints both figures, the ratios and PASS/FAIL against the goals of issue 34 (`node_modules` ≤ 1.15×, import
 * ≤ 1.2×). Asserts nothing. Installing needs the npm registry (its cache makes later runs quick).
 *
 *   npm run bench:install [-- --runs 9] [--keep]   (--keep: leave the temporary apps in place and print where)
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { arg, flag, root } from "./support.js"

const runs = Math.max(1, Number(arg("runs", "9")))
const keep = flag("keep")

/** Goals of issue 34: the Mediagate app over the bare app. */
const goals = { size: 1.15, import: 1.2 }

/** The packages an app installs from the repository (the publishable ones). */
const published = [
  "contract",
  "persistence",
  "outbound",
  "engine",
  "billing",
  "accounts",
  "webhooks",
  "server",
  "vendors",
  "dashboard",
  "node"
]

/** The bare app's packages: the Effect packages, the driver and Express. */
const bare = [
  "effect",
  "@effect/platform",
  "@effect/platform-node",
  "@effect/sql",
  "@effect/sql-sqlite-node",
  "express"
]

const npm = process.platform === "win32" ? "npm.cmd" : "npm"

const run = (command: string, args: ReadonlyArray<string>, cwd: string) => {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", maxBuffer: 64 << 20 })
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd}:\n${result.stdout}\n${result.stderr}`)
  }
  return result.stdout
}

const versionIn = (dir: string, name: string): string =>
  JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")).version

const makeApp = (dir: string, dependencies: Record<string, string>) => {
  mkdirSync(dir)
  const manifest = { name: "bench-app", private: true, type: "module", dependencies }
  writeFileSync(join(dir, "package.json"), JSON.stringify(manifest))
  run(npm, ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], dir)
}

/** Disk usage of a folder in bytes (`du -sk`). */
const diskUsage = (dir: string) => Number(run("du", ["-sk", dir], root).split("\t")[0]) * 1024

/** The top-level packages of an app's `node_modules` (`name` or `@scope/name`). */
const packagesOf = (dir: string): Array<string> => {
  const modules = join(dir, "node_modules")
  return readdirSync(modules).filter((entry) => !entry.startsWith(".")).flatMap((entry) =>
    entry.startsWith("@") ? readdirSync(join(modules, entry)).map((scoped) => `${entry}/${scoped}`) : [entry]
  ).filter((name) => statSync(join(modules, name)).isDirectory())
}

/** A script timing the import of `specifiers` in a fresh process; prints milliseconds. */
const importScript = (specifiers: ReadonlyArray<string>) =>
  `const t = performance.now(); await Promise.all(${JSON.stringify(specifiers)}.map((s) => import(s)));` +
  `console.log(performance.now() - t)`

const timeImport = (dir: string, specifiers: ReadonlyArray<string>) =>
  Number(run(process.execPath, ["--input-type=module", "-e", importScript(specifiers)], dir).trim())

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`
const verdict = (ratio: number, goal: number) =>
  `${ratio.toFixed(3)}× (goal ≤ ${goal}×: ${ratio <= goal ? "PASS" : "FAIL"})`

const work = mkdtempSync(join(tmpdir(), "mg-bench-install-"))
try {
  const tarballs = join(work, "tarballs")
  mkdirSync(tarballs)
  const packed = JSON.parse(run(npm, [
    "pack",
    "--json",
    "--ignore-scripts",
    "--pack-destination",
    tarballs,
    ...published.map((p) => `--workspace=@mediagate/${p}`)
  ], root)) as Array<{ name: string; filename: string }>
  const tarballOf = (name: string) => {
    const entry = packed.find((e) => e.name === name)!
    return `file:${join(tarballs, entry.filename.replace(/^@/, "").replace(/\//g, "-"))}`
  }

  const app = join(work, "mediagate-app")
  makeApp(app, {
    ...Object.fromEntries(published.map((p) => [`@mediagate/${p}`, tarballOf(`@mediagate/${p}`)])),
    "@effect/sql-sqlite-node": `^${versionIn(root, "@effect/sql-sqlite-node")}`,
    express: `^${versionIn(root, "express")}`
  })
  const bareApp = join(work, "bare-app")
  makeApp(bareApp, Object.fromEntries(bare.map((name) => [name, versionIn(app, name)])))

  const sizes = { mediagate: diskUsage(join(app, "node_modules")), bare: diskUsage(join(bareApp, "node_modules")) }
  const barePackages = new Set(packagesOf(bareApp))
  const extra = packagesOf(app).filter((name) => !barePackages.has(name))
    .map((name) => ({ name, bytes: diskUsage(join(app, "node_modules", name)) }))
    .sort((a, b) => b.bytes - a.bytes)

  const mediagateImport = ["@mediagate/node"]
  timeImport(app, mediagateImport)
  timeImport(bareApp, bare)
  const times = { mediagate: [] as Array<number>, bare: [] as Array<number> }
  for (let i = 0; i < runs; i++) {
    times.mediagate.push(timeImport(app, mediagateImport))
    times.bare.push(timeImport(bareApp, bare))
  }
  const medians = { mediagate: median(times.mediagate), bare: median(times.bare) }
  const range = (values: ReadonlyArray<number>) =>
    `${Math.round(Math.min(...values))}–${Math.round(Math.max(...values))} ms`

  const bareVersions = bare.map((name) => `${name}@${versionIn(bareApp, name)}`).join(", ")
  console.log(`node ${process.version}; bare app: ${bareVersions}`)
  console.log("")
  console.log("| | Mediagate app | bare app | ratio |")
  console.log("|---|---|---|---|")
  const sizeRatio = verdict(sizes.mediagate / sizes.bare, goals.size)
  console.log(`| node_modules (du) | ${mb(sizes.mediagate)} | ${mb(sizes.bare)} | ${sizeRatio} |`)
  console.log(
    `| import, median of ${runs} | ${Math.round(medians.mediagate)} ms | ${Math.round(medians.bare)} ms | ` +
      `${verdict(medians.mediagate / medians.bare, goals.import)} |`
  )
  console.log(`| import, range | ${range(times.mediagate)} | ${range(times.bare)} | |`)
  console.log("")
  console.log(`Packages only the Mediagate app installs (${extra.length}, ${mb(sizes.mediagate - sizes.bare)} in all):`)
  for (const { bytes, name } of extra) console.log(`  ${mb(bytes).padStart(9)}  ${name}`)
  if (keep) console.log(`\nThe apps: ${app}, ${bareApp}`)
} finally {
  if (!keep) rmSync(work, { recursive: true, force: true })
}
