// ESLint 9 flat config, after Effect's own repository (Effect-TS/effect, eslint.config.mjs): eslint's and
// typescript-eslint's recommended rules, Effect's choices on top, and the `@effect/dprint` rule, which formats
// TypeScript and JavaScript with dprint at 120 columns (`npm run lint:fix` applies it). JSON and Markdown are
// formatted by the dprint CLI (dprint.json). See docs/development.md, "Lint, format and releases".
import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import importPlugin from "eslint-plugin-import"
import sortDestructureKeys from "eslint-plugin-sort-destructure-keys"
import globals from "globals"
import tseslint from "typescript-eslint"

/** dprint's TypeScript settings: the same as Effect's (and as dprint.json's for the other languages). */
const dprint = {
  indentWidth: 2,
  lineWidth: 120,
  semiColons: "asi",
  quoteStyle: "alwaysDouble",
  trailingCommas: "never",
  operatorPosition: "maintain",
  "arrowFunction.useParentheses": "force"
}

export default [
  {
    ignores: [
      "**/node_modules/",
      "**/dist/",
      "**/build/",
      "**/coverage/",
      "**/docs/",
      "**/.tmp/",
      "data/",
      "bench/profiles/",
      "test-results/",
      // written by `npm run client:generate` (openapi-typescript's output), kept fresh by a test
      "packages/client/src/generated/"
    ]
  },
  {
    files: ["**/*.{ts,tsx,mts,cts,js,mjs,cjs}"],
    ...js.configs.recommended
  },
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    files: ["**/*.{ts,tsx,mts,cts,js,mjs,cjs}"],
    plugins: {
      import: importPlugin,
      "sort-destructure-keys": sortDestructureKeys
    },
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module"
    },
    linterOptions: {
      reportUnusedDisableDirectives: "error"
    },
    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "object-shorthand": "error",
      "prefer-destructuring": "off",
      "sort-imports": "off",
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.property.name='push'] > SpreadElement.arguments",
          message: "Do not use spread arguments in Array.push"
        }
      ],
      "no-unused-vars": "off",
      "require-yield": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "import/first": "error",
      "import/newline-after-import": "error",
      "import/no-duplicates": "error",
      "sort-destructure-keys/sort-destructure-keys": "error",
      "@typescript-eslint/array-type": ["error", { default: "generic", readonly: "generic" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-unsafe-function-type": "off",
      "@typescript-eslint/no-wrapper-object-types": "off",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/ban-ts-comment": "off",
      "@typescript-eslint/explicit-function-return-type": "off",
      "@typescript-eslint/explicit-module-boundary-types": "off",
      "@typescript-eslint/no-array-constructor": "off",
      "@typescript-eslint/no-use-before-define": "off",
      "@typescript-eslint/no-namespace": "off",
      "@effect/dprint": ["error", { config: dprint }]
    }
  },
  {
    // plain JavaScript run by Node (build and bench scripts)
    files: ["**/*.{js,mjs,cjs}"],
    languageOptions: {
      globals: globals.node
    }
  },
  // dprint's TypeScript formatter writes `<A>(` for `<A,>(`, which TSX reads as an element: the dashboard's TSX
  // views are formatted by hand
  {
    files: ["**/*.tsx"],
    rules: { "@effect/dprint": "off" }
  }
]
