// Checkpoint values of `pubsub:<topic>`: standard, padded base64 of the raw replay id bytes (§4.3).
// Node's decoder never throws, so a stored value is validated strictly before it is trusted.
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function checkpointKey(topic: string): string {
  return `pubsub:${topic}`;
}

export function encodeReplayId(replayId: Buffer): string {
  return replayId.toString("base64");
}

/** The replay id bytes, or undefined when the stored value is not strict, non-empty base64. */
export function decodeReplayId(value: string): Buffer | undefined {
  if (value.length === 0 || !STRICT_BASE64.test(value)) return undefined;
  const bytes = Buffer.from(value, "base64");
  return bytes.length > 0 ? bytes : undefined;
}
