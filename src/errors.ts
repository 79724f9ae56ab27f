// Every error an operator may see is created here or by a sibling factory with a stable `code`;
// tests and dashboards key on the code, never on the wording.

export class Sf2LokiError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Invalid or unreadable configuration, or a wiring guard that fails at build time. CLI exit 2. */
export class ConfigError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_CONFIG", message, options);
  }
}

/** One line for an operator: the message of a known error, the text of anything else. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * Line breaks and the indentation around them become one space: SDK texts carry lines of their own
 * (Azure's "\nRequestId:…\nTime:…"), and a message that promises one line must keep it.
 */
export function foldLines(text: string): string {
  return text.includes("\n") || text.includes("\r") ? text.replace(/\s*[\r\n]+\s*/g, " ").trim() : text;
}
