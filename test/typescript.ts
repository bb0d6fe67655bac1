import { createRequire } from "node:module"
import { dirname, join } from "node:path"

/**
 * The compiler options of the strict TypeScript projects the end-to-end suites write as a user would
 * (`client-sdk.test.ts`, `consumer.test.ts`): the strictest flags, declaration files checked too.
 */
export const strictCompilerOptions = {
  target: "ES2022",
  module: "NodeNext",
  moduleResolution: "NodeNext",
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  skipLibCheck: false
} as const

const require = createRequire(import.meta.url)
/** A TypeScript package's `bin/tsc` (through its package.json: TypeScript 7's exports map does not list it). */
const compilerOf = (name: "typescript" | "typescript-7") =>
  join(dirname(require.resolve(`${name}/package.json`)), "bin", "tsc")

/**
 * The compilers the users' projects are checked with: TypeScript 7 (the native compiler, the one the repository
 * builds with: `scripts/tsc.mjs`) and TypeScript 5.9 (the line typescript-eslint still needs; users have projects on
 * it too).
 */
export const compilers = { typescript7: compilerOf("typescript-7"), typescript5: compilerOf("typescript") } as const
