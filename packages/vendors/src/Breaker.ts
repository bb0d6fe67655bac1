/**
 * Circuit breakers of upstream channels, one per channel and process (docs/channels.md "Health").
 *
 * - **closed**: calls go through. It opens after `failures` consecutive failed calls, or when at least
 *   `minimumCalls` calls of the last `window` failed at an error rate of `errorRate` or more.
 * - **open**: no calls for `cooldown`; each time a probe fails the cooldown doubles, up to `maxCooldown`.
 * - **half_open**: once the cooldown has passed, one call at a time is let through as a probe (a probe that never
 *   reports back frees its slot after `probeTimeout`); a probe that succeeds closes the breaker, one that fails
 *   opens it again.
 *
 * Only failures that say something about the upstream's health count: timeouts, refused connections, 5xx, 429 and
 * rejected credentials. A request the upstream refuses on its merits (invalid input, content policy) is an answer:
 * it counts as a success. Time is passed in by the caller (Effect's `Clock`, so `TestClock` drives it in tests).
 *
 * The breakers are plain synchronous state; a state change is kept until the caller takes it ({@link
 * Breakers.transitions}), so that the fiber that caused it logs it with the running program's logger.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"

/**
 * Breaker settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface BreakerOptions {
  /** Consecutive failures that open a closed breaker. Default 5. */
  readonly failures?: number
  /** Error rate over `window` that opens it (with at least `minimumCalls` calls). Default 0.5. */
  readonly errorRate?: number
  /** Calls in `window` before the error rate counts. Default 20. */
  readonly minimumCalls?: number
  /** The error-rate window. Default 60 s. */
  readonly window?: Duration.DurationInput
  /** How long an opened breaker refuses calls before a probe. Default 30 s. */
  readonly cooldown?: Duration.DurationInput
  /** Longest cooldown after failed probes. Default 5 min. */
  readonly maxCooldown?: Duration.DurationInput
  /** When a probe that has not reported back stops holding the half-open slot. Default 2 min. */
  readonly probeTimeout?: Duration.DurationInput
}

/**
 * The state of a breaker.
 *
 * @since 0.1.0
 * @category models
 */
export type BreakerState = "closed" | "open" | "half_open"

/**
 * What a breaker says about a call now.
 *
 * @since 0.1.0
 * @category models
 */
export type Admission =
  | { readonly _tag: "Allowed"; readonly probe: boolean }
  | { readonly _tag: "Refused"; readonly retryAt: number }

/**
 * A breaker as the admin views show it.
 *
 * @since 0.1.0
 * @category models
 */
export interface BreakerView {
  readonly breaker: BreakerState
  readonly consecutiveFailures: number
  readonly openedAt: number | null
  readonly lastError: string | null
}

/**
 * A state change, for logs and metrics.
 *
 * @since 0.1.0
 * @category models
 */
export interface Transition {
  readonly id: string
  readonly from: BreakerState
  readonly to: BreakerState
  readonly reason: string
}

const buckets = 6

interface Entry {
  state: BreakerState
  consecutive: number
  openedAt: number | null
  /** When an open breaker lets a probe through. */
  retryAt: number
  cooldownMs: number
  /** When the probe in flight was let through (half open); null: none. */
  probeSince: number | null
  lastError: string | null
  /** Calls and failures per bucket of `window / buckets`, the bucket index of each slot. */
  readonly calls: Array<number>
  readonly failed: Array<number>
  readonly slot: Array<number>
}

/**
 * The breakers of every channel of one process.
 *
 * @since 0.1.0
 * @category models
 */
export class Breakers {
  /** @internal */
  readonly #entries = new Map<string, Entry>()
  /** @internal */
  readonly #failures: number
  /** @internal */
  readonly #errorRate: number
  /** @internal */
  readonly #minimumCalls: number
  /** @internal */
  readonly #bucketMs: number
  /** @internal */
  readonly #cooldownMs: number
  /** @internal */
  readonly #maxCooldownMs: number
  /** @internal */
  readonly #probeTimeoutMs: number
  /**
   * State changes not taken yet, oldest first.
   *
   * @internal
   */
  #transitions: Array<Transition> = []

  constructor(options: BreakerOptions = {}) {
    this.#failures = Math.max(1, options.failures ?? 5)
    this.#errorRate = options.errorRate ?? 0.5
    this.#minimumCalls = Math.max(1, options.minimumCalls ?? 20)
    this.#bucketMs = Math.max(1, Math.floor(Duration.toMillis(options.window ?? "60 seconds") / buckets))
    this.#cooldownMs = Math.max(1, Duration.toMillis(options.cooldown ?? "30 seconds"))
    this.#maxCooldownMs = Math.max(this.#cooldownMs, Duration.toMillis(options.maxCooldown ?? "5 minutes"))
    this.#probeTimeoutMs = Duration.toMillis(options.probeTimeout ?? "2 minutes")
  }

  /** @internal */
  #entry(id: string): Entry {
    let entry = this.#entries.get(id)
    if (entry === undefined) {
      entry = {
        state: "closed",
        consecutive: 0,
        openedAt: null,
        retryAt: 0,
        cooldownMs: this.#cooldownMs,
        probeSince: null,
        lastError: null,
        calls: Array(buckets).fill(0),
        failed: Array(buckets).fill(0),
        slot: Array(buckets).fill(-1)
      }
      this.#entries.set(id, entry)
    }
    return entry
  }

  /** @internal */
  #move(id: string, entry: Entry, to: BreakerState, reason: string) {
    const from = entry.state
    if (from === to) return
    entry.state = to
    this.#transitions.push({ id, from, to, reason })
  }

  /** @internal */
  #open(id: string, entry: Entry, now: number, cooldownMs: number, reason: string) {
    entry.openedAt = now
    entry.cooldownMs = cooldownMs
    entry.retryAt = now + cooldownMs
    entry.probeSince = null
    this.#move(id, entry, "open", reason)
  }

  /**
   * Counts a call in the error-rate window; answers the window's calls and failures.
   *
   * @internal
   */
  #count(entry: Entry, now: number, failed: boolean): { readonly calls: number; readonly failed: number } {
    const index = Math.floor(now / this.#bucketMs)
    const at = index % buckets
    if (entry.slot[at] !== index) {
      entry.slot[at] = index
      entry.calls[at] = 0
      entry.failed[at] = 0
    }
    entry.calls[at]!++
    if (failed) entry.failed[at]!++
    let calls = 0
    let failures = 0
    for (let i = 0; i < buckets; i++) {
      if (entry.slot[i]! > index - buckets) {
        calls += entry.calls[i]!
        failures += entry.failed[i]!
      }
    }
    return { calls, failed: failures }
  }

  /**
   * Whether a call to the channel may go now; a half-open breaker lets one probe through at a time.
   *
   * @since 0.1.0
   */
  admit(id: string, now: number): Admission {
    const entry = this.#entry(id)
    switch (entry.state) {
      case "closed":
        return { _tag: "Allowed", probe: false }
      case "open": {
        if (now < entry.retryAt) return { _tag: "Refused", retryAt: entry.retryAt }
        this.#move(id, entry, "half_open", "cooldown over: probing")
        entry.probeSince = now
        return { _tag: "Allowed", probe: true }
      }
      case "half_open": {
        if (entry.probeSince !== null && now - entry.probeSince < this.#probeTimeoutMs) {
          return { _tag: "Refused", retryAt: entry.probeSince + this.#probeTimeoutMs }
        }
        entry.probeSince = now
        return { _tag: "Allowed", probe: true }
      }
    }
  }

  /**
   * Whether the channel would admit a call now, without taking a probe slot.
   *
   * @since 0.1.0
   */
  available(id: string, now: number): boolean {
    const entry = this.#entries.get(id)
    if (entry === undefined || entry.state === "closed") return true
    if (entry.state === "open") return now >= entry.retryAt
    return entry.probeSince === null || now - entry.probeSince >= this.#probeTimeoutMs
  }

  /**
   * When a refused channel admits a call again (now, for one that admits).
   *
   * @since 0.1.0
   */
  retryAt(id: string, now: number): number {
    const entry = this.#entries.get(id)
    if (entry === undefined || entry.state === "closed") return now
    if (entry.state === "open") return Math.max(now, entry.retryAt)
    return entry.probeSince === null ? now : Math.max(now, entry.probeSince + this.#probeTimeoutMs)
  }

  /**
   * A call that got an answer.
   *
   * @since 0.1.0
   */
  success(id: string, now: number): void {
    const entry = this.#entry(id)
    this.#count(entry, now, false)
    entry.consecutive = 0
    if (entry.state !== "closed") {
      entry.openedAt = null
      entry.probeSince = null
      entry.cooldownMs = this.#cooldownMs
      this.#move(id, entry, "closed", "probe succeeded")
    }
  }

  /**
   * A call that failed for a reason that counts against the channel's health.
   *
   * @since 0.1.0
   */
  failure(id: string, now: number, message: string): void {
    const entry = this.#entry(id)
    const window = this.#count(entry, now, true)
    entry.consecutive++
    entry.lastError = message
    switch (entry.state) {
      case "half_open":
        this.#open(id, entry, now, Math.min(this.#maxCooldownMs, entry.cooldownMs * 2), `probe failed: ${message}`)
        return
      case "open":
        return
      case "closed": {
        if (entry.consecutive >= this.#failures) {
          this.#open(id, entry, now, this.#cooldownMs, `${entry.consecutive} consecutive failures: ${message}`)
        } else if (window.calls >= this.#minimumCalls && window.failed / window.calls >= this.#errorRate) {
          this.#open(id, entry, now, this.#cooldownMs, `${window.failed} of ${window.calls} calls failed: ${message}`)
        }
      }
    }
  }

  /**
   * The breaker as the admin views show it (`closed` for a channel never called).
   *
   * @since 0.1.0
   */
  view(id: string): BreakerView {
    const entry = this.#entries.get(id)
    if (entry === undefined) return { breaker: "closed", consecutiveFailures: 0, openedAt: null, lastError: null }
    return {
      breaker: entry.state,
      consecutiveFailures: entry.consecutive,
      openedAt: entry.state === "closed" ? null : entry.openedAt,
      lastError: entry.lastError
    }
  }

  /**
   * The state changes since the last call, oldest first (for logs and metrics; take them after every `admit`,
   * `success` and `failure`, or they pile up).
   *
   * @since 0.1.0
   */
  transitions(): ReadonlyArray<Transition> {
    if (this.#transitions.length === 0) return []
    const taken = this.#transitions
    this.#transitions = []
    return taken
  }

  /**
   * Forgets a channel (deleted, or its settings changed: a new upstream starts closed).
   *
   * @since 0.1.0
   */
  reset(id: string): void {
    this.#entries.delete(id)
  }
}
