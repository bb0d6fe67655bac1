import { project } from "../vitest.shared.js"

// the end-to-end suites alone, from this folder (the root configuration runs them with every other suite)
export default project({
  test: {
    name: "e2e",
    include: ["**/*.test.ts"],
    globalSetup: ["./global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 60_000
  }
})
