/**
 * The results the gateway copies (`transports-results.ts`), with the gateway on PostgreSQL.
 */
import { resultScenarios } from "./transports-results.js"

resultScenarios("PostgreSQL")
