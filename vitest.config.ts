import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    projects: ["packages/*", "!packages/testing", "examples/*", "test"]
  }
})
