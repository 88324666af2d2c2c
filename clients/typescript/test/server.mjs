// Starts a real engram (a new database, an admin key) for the tests, and a
// fetch that records every route called, so the last test can check that
// each route of the API document was called.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const called = new Set();

export function trackingFetch(seen = []) {
  return async (url, init) => {
    called.add(`${init?.method ?? "GET"} ${new URL(url).pathname}`);
    const response = await fetch(url, init);
    seen.push(response.status);
    return response;
  };
}

export async function startEngram() {
  const binary = process.env.ENGRAM_BIN ?? join(root, "target/debug/engram");
  const work = mkdtempSync(join(tmpdir(), "engram-ts-"));
  const env = {
    ...process.env,
    ENGRAM_DB_PATH: join(work, "engram.db"),
    ENGRAM_LISTEN: "127.0.0.1:0",
    RUST_LOG: "info",
  };
  const made = execFileSync(
    binary,
    ["keys", "create", "--name", "admin", "--role", "admin", "--max-sensitivity", "hyper", "--rate", "1000"],
    { env, encoding: "utf8" },
  );
  const secret = made.trim().split("\n").at(-1);
  const server = spawn(binary, [], { env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const address = await new Promise((resolveAddress, reject) => {
    const timer = setTimeout(() => reject(new Error(`engram did not start:\n${log}`)), 10_000);
    const read = (chunk) => {
      log += chunk;
      const found = /addr=(127\.0\.0\.1:\d+)/.exec(log);
      if (found) {
        clearTimeout(timer);
        resolveAddress(found[1]);
      }
    };
    server.stdout.on("data", read);
    server.stderr.on("data", read);
    server.on("exit", (code) => reject(new Error(`engram exited (${code}):\n${log}`)));
  });
  return {
    url: `http://${address}`,
    secret,
    stop() {
      server.kill();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
