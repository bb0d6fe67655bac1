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
