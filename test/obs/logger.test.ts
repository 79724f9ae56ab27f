// The process log speaks the Python version's structlog dialect (parity audit §7): an operator's log
// pipeline that parsed `event`/`level`/`timestamp` keeps parsing after the swap.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createLogger, type LogFormat } from "../../src/obs/logger.ts";
import { tempDir } from "../support/tmp.ts";

function capture(format: LogFormat, level = "debug") {
  const lines: string[] = [];
  const logger = createLogger({ level, format, destination: { write: (s: string) => lines.push(s) } });
  return { logger, lines };
}

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

describe("process log format", () => {
  it("no format writes a URL's password, whether in the message, a field or an error (#34)", () => {
    for (const format of ["json", "logfmt", "text"] as const) {
      const { logger, lines } = capture(format);
      logger.warn(
        { proxy: "http://svc:pa/ss@proxy:3128", err: new Error("GET https://u:hunter2@loki/x failed") },
        "via http://svc:hunter2@proxy:3128",
      );
      assert.equal(lines.length, 1);
      assert.doesNotMatch(lines[0]!, /hunter2|pa\/ss/, format);
      assert.match(lines[0]!, /http:\/\/\*\*\*@proxy:3128/, format);
    }
  });

  it("json: event, level in Python's words, ISO UTC timestamp, then the fields, one record per line", () => {
    const { logger, lines } = capture("json");
    logger.child({ component: "pubsub", org: "prod" }).warn({ topic: "/event/X", n: 3 }, "stream error");
    logger.info("plain");
    logger.debug("d");
    logger.error("e");
    logger.fatal("f");
    assert.equal(lines.length, 5);
    for (const l of lines) assert.ok(l.endsWith("\n") && !l.slice(0, -1).includes("\n"));
    const rec = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.deepEqual(Object.keys(rec), ["event", "level", "timestamp", "component", "org", "topic", "n"]);
    assert.equal(rec.event, "stream error");
    assert.equal(rec.level, "warning");
    assert.match(String(rec.timestamp), ISO_UTC);
    assert.ok(lines[0]!.startsWith('{"event": "stream error", "level": "warning", "timestamp": "'));
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { level: string }).level),
      ["warning", "info", "debug", "error", "critical"],
    );
  });

  it("logfmt: the same keys as key=value, quoted when needed", () => {
    const { logger, lines } = capture("logfmt");
    logger.warn({ topic: "/event/X", why: 'a "b"' }, "stream error");
    assert.match(
      lines[0]!,
      /^event="stream error" level=warning timestamp=\d{4}-[\d:.T-]+Z topic=\/event\/X why="a \\"b\\""\n$/,
    );
  });

  it("the level filter takes Python's names", () => {
    const { logger, lines } = capture("json", "warning");
    logger.info("hidden");
    logger.warn("shown");
    assert.equal(lines.length, 1);
  });

  it("a daemon with log_format: json writes its records on stdout even from a pipe", async () => {
    const dir = tempDir();
    const config = join(dir, "c.yaml");
    writeFileSync(
      config,
      [
        "salesforce: {auth_mode: client_credentials, client_id: x, client_secret: y, org_id: 00D000000000001AAA, login_url: 'http://127.0.0.1:9'}",
        "sources: {pubsub: {enabled: false}}",
        "sink: {loki: {url: 'http://127.0.0.1:9/loki/api/v1/push'}}",
        `state: {file: {path: '${join(dir, "state.json")}'}}`,
        "service: {log_format: json, health_addr: '127.0.0.1:0'}",
      ].join("\n"),
    );
    const child = spawn(process.execPath, ["bin/sf2loki.js", "--config", config], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const starting = await new Promise<Record<string, unknown> | undefined>((resolve) => {
      const timer = setTimeout(() => {
        resolve(undefined);
      }, 20_000);
      child.stdout.on("data", (c: Buffer) => {
        stdout += c.toString();
        const found = stdout
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((x) => x.event === "sf2loki starting");
        if (found) {
          clearTimeout(timer);
          resolve(found);
        }
      });
    });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    assert.ok(starting, `stdout: ${stdout}\nstderr: ${stderr}`);
    assert.equal(starting.level, "info");
    assert.match(String(starting.timestamp), ISO_UTC);
    assert.doesNotMatch(stderr, /"event"/, "no record on stderr");
  });
});
