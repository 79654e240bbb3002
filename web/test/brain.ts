// The harness of the tests that run against a real brain: buildBrain compiles
// ./cmd/brain once (the vitest globalSetup calls it), startBrain runs one
// server per call with its own settings, port and data directory, and keeps
// its log so a failing test can print it.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";

/** The repository's root (web/..), where `go build ./cmd/brain` runs. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** buildBrain compiles the server into dir and returns the binary's path. */
export async function buildBrain(dir: string): Promise<string> {
  const bin = join(dir, "brain");
  await new Promise<void>((ok, fail) => {
    execFile("go", ["build", "-o", bin, "./cmd/brain"], { cwd: repoRoot, maxBuffer: 16 << 20 }, (err, _out, stderr) =>
      err ? fail(new Error(`go build ./cmd/brain failed: ${err.message}\n${stderr}`)) : ok(),
    );
  });
  return bin;
}

export interface Brain {
  /** The server's origin, e.g. http://127.0.0.1:41234 (no trailing slash). */
  readonly url: string;
  /** The password of its admin user. */
  readonly adminPassword: string;
  /** Everything it wrote to stdout and stderr so far. */
  logs(): string;
  /** Sends SIGTERM, waits for the exit (SIGKILL after 20 s), removes the data directory; resolves with the exit code. */
  stop(): Promise<number | null>;
}

export interface StartOptions {
  /** The binary (default: the one the globalSetup built, or $BRAIN_BIN). */
  bin?: string;
  /** How long to wait for the listening line and a 200 from /api/v1/ready (default 30 s). */
  readyTimeoutMs?: number;
}

const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const p of running) p.kill("SIGKILL");
});

async function binary(o: StartOptions): Promise<string> {
  if (o.bin) return o.bin;
  if (process.env.BRAIN_BIN) return process.env.BRAIN_BIN;
  // Only inside a vitest worker: the path the globalSetup provided.
  const { inject } = await import("vitest");
  return inject("brainBin");
}

// The listening line in either log format.
const listening = [/msg="brain listening" addr=(\S+)/, /"msg":"brain listening","addr":"([^"]+)"/];

/**
 * startBrain runs brain on 127.0.0.1:0 with no metrics listener, a fresh data
 * directory and an admin password, plus env (which wins; the BRAIN_ and MEM_
 * variables of this process are not passed on). It resolves once
 * /api/v1/ready answers 200.
 */
export async function startBrain(env: Record<string, string> = {}, o: StartOptions = {}): Promise<Brain> {
  const bin = await binary(o);
  const dataDir = await mkdtemp(join(tmpdir(), "brain-data-"));
  const adminPassword = env.BRAIN_ADMIN_PASSWORD ?? `admin-${randomBytes(12).toString("hex")}`;
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(BRAIN_|MEM_)/.test(k)));
  const child = spawn(bin, [], {
    env: {
      ...inherited,
      BRAIN_ADDR: "127.0.0.1:0",
      BRAIN_METRICS_ADDR: "off",
      BRAIN_DATA_DIR: dataDir,
      BRAIN_ADMIN_PASSWORD: adminPassword,
      BRAIN_LOG_FORMAT: "text",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  const chunks: string[] = [];
  const exited = new Promise<number | null>((ok) => child.once("exit", (code) => ok(code)));
  exited.then(() => running.delete(child));
  child.stdout!.setEncoding("utf8").on("data", (s: string) => chunks.push(s));
  const addr = new Promise<string>((ok) => {
    let line = "";
    child.stderr!.setEncoding("utf8").on("data", (s: string) => {
      chunks.push(s);
      line += s;
      for (const re of listening) {
        const m = re.exec(line);
        if (m?.[1]) return ok(m[1]);
      }
      line = line.slice(line.lastIndexOf("\n") + 1);
    });
  });
  const logs = () => chunks.join("");

  let stopped: Promise<number | null> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 20_000);
        await exited;
        clearTimeout(t);
      }
      await rm(dataDir, { recursive: true, force: true });
      return child.exitCode;
    })());

  const timeout = o.readyTimeoutMs ?? 30_000;
  const deadline = Date.now() + timeout;
  try {
    const a = await Promise.race([
      addr,
      exited.then((code) => Promise.reject(new Error(`brain exited (${code}) before listening`))),
      new Promise<never>((_, fail) => setTimeout(() => fail(new Error(`brain did not listen within ${timeout} ms`)), timeout).unref()),
    ]);
    const url = `http://${a}`;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`brain exited (${child.exitCode}) before ready`);
      const res = await fetch(`${url}/api/v1/ready`).catch(() => undefined);
      await res?.body?.cancel();
      if (res?.status === 200) return { url, adminPassword, logs, stop };
      if (Date.now() > deadline) throw new Error(`brain not ready within ${timeout} ms (last status ${res?.status})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (e) {
    await stop();
    throw new Error(`${(e as Error).message}\n--- brain's log ---\n${logs()}`);
  }
}
