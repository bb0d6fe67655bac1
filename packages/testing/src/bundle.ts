/**
 * A test's child-process script as one JavaScript file: the TypeScript entry and the workspace's sources it imports
 * (through `@mediagate/source`) bundled by esbuild, every other package left to `node_modules`. A child started
 * with plain `node` on it loads one file instead of transpiling each source module (tsx: about 1.5 s of CPU more
 * per process). One bundle per entry and process of the suite, in a folder of `node_modules/.cache` (where `node`
 * finds the packages left out) removed when the process exits.
 */
import { build } from "esbuild"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { basename, join } from "node:path"
import { fileURLToPath } from "node:url"

/** Where the bundles go: below the repository's `node_modules`, so that their imports of packages resolve. */
const cache = fileURLToPath(new URL("../../../node_modules/.cache/", import.meta.url))

let folder: string | undefined
const bundles = new Map<string, Promise<string>>()

/** The path of `entry` (an absolute `.ts` path) bundled for `node`. */
export const bundled = (entry: string): Promise<string> => {
  const known = bundles.get(entry)
  if (known !== undefined) return known
  if (folder === undefined) {
    mkdirSync(cache, { recursive: true })
    const made = mkdtempSync(join(cache, "mg-test-bundle-"))
    folder = made
    process.once("exit", () => rmSync(made, { recursive: true, force: true }))
  }
  const outfile = join(folder, `${bundles.size}-${basename(entry).replace(/\.ts$/, ".mjs")}`)
  const made = build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    conditions: ["@mediagate/source"],
    logLevel: "silent",
    plugins: [{
      name: "workspace-only",
      setup(plugin) {
        // the workspace's packages are bundled from their sources; every other package stays in node_modules
        plugin.onResolve(
          { filter: /^[^./]/ },
          (args) => args.path.startsWith("@mediagate/") ? undefined : { external: true }
        )
      }
    }]
  }).then(() => outfile)
  bundles.set(entry, made)
  return made
}
