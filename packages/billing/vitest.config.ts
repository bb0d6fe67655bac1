import { defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "billing",
    include: ["test/**/*.test.ts"]
  }
})
