/** The declarations of `tsc.mjs` (for the tests written in TypeScript). */

/** The `bin/tsc` of one of the two TypeScript packages; undefined when it is not installed. */
export declare const compilerOf: (name: "typescript" | "typescript-7") => string | undefined

/** The compiler's `bin/tsc`: TypeScript 7's, else TypeScript 5's; undefined when neither is installed. */
export declare const compiler: () => string | undefined
