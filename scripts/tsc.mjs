#!/usr/bin/env node
/**
 * The TypeScript compiler this repository builds and type-checks with: TypeScript 7, the native compiler
 * (devDependency `typescript-7`, an alias of `typescript@^7`), which builds every package in about a third of
 * TypeScript 5's time. `typescript` (5.9) stays installed for the tools that use the compiler's JavaScript API,
 * which TypeScript 7 does not have (typescript-eslint, `@effect/docgen`, openapi-typescript), and both packages
 * provide a `tsc` command, so `node_modules/.bin/tsc` may be either: the scripts run the compiler through this file.
 * TypeScript 5.9 is the fallback when the alias is not installed. Use one compiler for a folder's builds: each
 * takes the other's build info for out of date and builds everything again.
 *
 *   node scripts/tsc.mjs <tsc arguments>        (npm run check, npm run build, each package's build and prepack)
 */
import { spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const require = createRequire(import.meta.url)

/**
 * The `bin/tsc` of one of the two TypeScript packages (`typescript-7` or `typescript`); undefined when it is not
 * installed. Resolved through its package.json: TypeScript 7's exports map does not list bin/tsc.
 */
export const compilerOf = (name) => {
  try {
    return join(dirname(require.resolve(`${name}/package.json`)), "bin", "tsc")
  } catch {
    return undefined
  }
}

/** The compiler's `bin/tsc`: TypeScript 7's, else TypeScript 5's; undefined when neither is installed. */
export const compiler = () => compilerOf("typescript-7") ?? compilerOf("typescript")

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const tsc = compiler()
  if (tsc === undefined) {
    console.error("TypeScript is not installed: run \"npm ci\" first")
    process.exit(1)
  }
  const result = spawnSync(process.execPath, [tsc, ...process.argv.slice(2)], { stdio: "inherit" })
  process.exit(result.status ?? 1)
}
