/**
 * Upstream channels end to end with the gateway on SQLite: the scenarios of `channels.ts` (weights, failover and the
 * breaker, a killed upstream, concurrency across nodes).
 */
import { channelScenarios } from "./channels.js"

channelScenarios({ name: "SQLite", postgres: false })
