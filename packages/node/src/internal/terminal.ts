/**
 * Colour in what the `mediagate` command and the server write (the CLI's help and errors, the `pretty` logger), and
 * whether an output is a terminal (the first start's keys, `Server.ts`).
 *
 * The colour rule, per output stream, in this order:
 * 1. `FORCE_COLOR` set to anything but `0` or `false` (an empty value too): colour, even into a pipe or a file. It
 *    wins over `NO_COLOR`, as in Node's own `tty` rule.
 * 2. `FORCE_COLOR=0` or `FORCE_COLOR=false`: no colour.
 * 3. `NO_COLOR` set and not empty (https://no-color.org): no colour.
 * 4. `TERM=dumb`: no colour.
 * 5. Otherwise colour only when the stream is a TTY.
 *
 * Without colour, a {@link plainConsole} writes what `@effect/cli` renders (help, validation errors) without its
 * ANSI escape sequences: `@effect/cli` has no setting of its own for that.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as Console from "effect/Console"
import * as Option from "effect/Option"

/** The environment variables of the colour rule. */
export interface ColourEnvironment {
  readonly forceColor: Option.Option<string>
  readonly noColor: Option.Option<string>
  readonly term: Option.Option<string>
}

/** `FORCE_COLOR`, `NO_COLOR` and `TERM`, from Effect `Config`. */
export const config: Config.Config<ColourEnvironment> = Config.all({
  forceColor: Config.option(Config.string("FORCE_COLOR")),
  noColor: Config.option(Config.string("NO_COLOR")),
  term: Config.option(Config.string("TERM"))
})

/** No colour variable set. */
export const noEnvironment: ColourEnvironment = {
  forceColor: Option.none(),
  noColor: Option.none(),
  term: Option.none()
}

/** Whether a stream may carry colour (the module's rule), given whether it is a TTY. */
export const colour = (environment: ColourEnvironment, isTTY: boolean): boolean => {
  if (Option.isSome(environment.forceColor)) {
    const value = environment.forceColor.value.trim().toLowerCase()
    return value !== "0" && value !== "false"
  }
  if (Option.isSome(environment.noColor) && environment.noColor.value !== "") return false
  if (Option.getOrUndefined(environment.term) === "dumb") return false
  return isTTY
}

/** An ANSI control sequence (CSI: colours, styles, cursor moves). */
// eslint-disable-next-line no-control-regex -- the escape character is what an ANSI sequence starts with
const ansi = /\x1b\[[0-?]*[ -/]*[@-~]/g

/** `text` without ANSI control sequences (a line without an escape character, every log line, is not scanned). */
export const strip = (text: string): string => text.includes("\x1b") ? text.replace(ansi, "") : text

const stripAll = (args: ReadonlyArray<unknown>): Array<unknown> =>
  args.map((arg) => typeof arg === "string" ? strip(arg) : arg)

/** Which of the process's streams may carry colour. */
export interface Streams {
  readonly stdout: boolean
  readonly stderr: boolean
}

/**
 * A Console that writes through `base`, without ANSI control sequences on the streams that may not carry colour
 * (`log`, `info`, `debug` write to stdout; `error`, `warn`, `trace` to stderr, as Node's console does).
 */
export const plainConsole = (base: Console.Console, streams: Streams): Console.Console => {
  const out = (write: (...args: ReadonlyArray<any>) => any, allowed: boolean) =>
    allowed ? write : (...args: ReadonlyArray<any>) => write(...stripAll(args))
  const unsafe = base.unsafe
  return {
    ...base,
    log: out(base.log, streams.stdout),
    info: out(base.info, streams.stdout),
    debug: out(base.debug, streams.stdout),
    error: out(base.error, streams.stderr),
    warn: out(base.warn, streams.stderr),
    trace: out(base.trace, streams.stderr),
    unsafe: {
      ...unsafe,
      log: out(unsafe.log.bind(unsafe), streams.stdout),
      info: out(unsafe.info.bind(unsafe), streams.stdout),
      debug: out(unsafe.debug.bind(unsafe), streams.stdout),
      error: out(unsafe.error.bind(unsafe), streams.stderr),
      warn: out(unsafe.warn.bind(unsafe), streams.stderr),
      trace: out(unsafe.trace.bind(unsafe), streams.stderr)
    }
  } as Console.Console
}
