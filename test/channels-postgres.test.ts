/**
 * Upstream channels end to end with the gateway on PostgreSQL: the scenarios of `channels.ts` (weights, failover and
 * the breaker, a killed upstream, concurrency across nodes). Skipped with a warning when no PostgreSQL answers at
 * 127.0.0.1:5432, failing under `CI=true`.
 */
import { channelScenarios } from "./channels.js"
import { runPostgres } from "./server.js"

if (!runPostgres) {
  console.warn("PostgreSQL is not running at 127.0.0.1:5432: the PostgreSQL channel scenarios are skipped")
}

channelScenarios({ name: "PostgreSQL", postgres: true })
