import { compilerOf } from "../scripts/tsc.mjs"

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

/** A TypeScript package's `bin/tsc` (`scripts/tsc.mjs`); the suites that use it need it installed. */
const installed = (name: "typescript" | "typescript-7") => {
  const path = compilerOf(name)
  if (path === undefined) throw new Error(`${name} is not installed: run "npm ci"`)
  return path
}

/**
 * The compilers the users' projects are checked with: TypeScript 7 (the native compiler, the one the repository
 * builds with: `scripts/tsc.mjs`) and TypeScript 5.9 (the line typescript-eslint still needs; users have projects on
 * it too).
 */
export const compilers = { typescript7: installed("typescript-7"), typescript5: installed("typescript") } as const
