// The browsers other than Chromium, over W3C WebDriver: Debian's Firefox ESR through
// geckodriver (from crates.io), and WebKitGTK's MiniBrowser through Debian's WebKitWebDriver,
// drawing into an Xvfb of the test's own. selenium-webdriver only speaks the protocol here:
// each driver is a process this module starts from a fixed path on a port it picks, so the
// library never looks for, or downloads, a driver or a browser itself. Everything is found
// or fails with the command that installs it; nothing is skipped.

import { spawn } from "node:child_process";
import { existsSync, openSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";

// selenium-webdriver is CommonJS; its http module has no ESM entry.
const require = createRequire(import.meta.url);
const { WebDriver } = require("selenium-webdriver");
const { Executor, HttpClient } = require("selenium-webdriver/http");

const SETUP = "scripts/setup.sh test";

const CARGO_BIN = join(process.env.CARGO_HOME ?? join(homedir(), ".cargo"), "bin");

/** Debian puts MiniBrowser under the multiarch folder, e.g. /usr/lib/x86_64-linux-gnu/. */
function miniBrowser() {
  const found = readdirSync("/usr/lib", { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join("/usr/lib", entry.name, "webkit2gtk-4.1", "MiniBrowser"))
    .find((path) => existsSync(path));
  return found ?? "/usr/lib/<multiarch>/webkit2gtk-4.1/MiniBrowser";
}

/**
 * The engines, each with what it needs on disk (its Debian package or crate named for the
 * message), how its driver is started on `port`, and the capabilities of a new session.
 */
export const ENGINES = [
  {
    name: "Firefox ESR",
    needs: [
      ["/usr/bin/firefox-esr", "Debian's firefox-esr"],
      [process.env.GECKODRIVER ?? join(CARGO_BIN, "geckodriver"), "geckodriver from crates.io"],
    ],
    driver: (port) => [
      process.env.GECKODRIVER ?? join(CARGO_BIN, "geckodriver"),
      ["--host", "127.0.0.1", "--port", String(port)],
    ],
    driverVersion: (capabilities) => `geckodriver ${capabilities.get("moz:geckodriverVersion")}`,
    capabilities: () => ({
      browserName: "firefox",
      "moz:firefoxOptions": { binary: "/usr/bin/firefox-esr", args: ["-headless"] },
    }),
  },
  {
    name: "WebKit",
    display: true,
    needs: [
      ["/usr/bin/WebKitWebDriver", "Debian's webkit2gtk-driver"],
      [miniBrowser(), "Debian's libwebkit2gtk-4.1-0 (a dependency of webkit2gtk-driver)"],
      ["/usr/bin/Xvfb", "Debian's xvfb"],
    ],
    driver: (port) => ["/usr/bin/WebKitWebDriver", [`--port=${port}`]],
    // Debian builds WebKitWebDriver from the same source as the engine, at the same version.
    driverVersion: (capabilities) => `WebKitWebDriver ${capabilities.get("browserVersion")}`,
    capabilities: () => ({
      browserName: "MiniBrowser",
      // WebKitGTK has no headless mode; --automation is what lets a WebDriver session drive it.
      "webkitgtk:browserOptions": { binary: miniBrowser(), args: ["--automation"] },
    }),
  },
];

/** Throws, naming the setup command, when a file the engine needs is not there. */
export function assertInstalled(engine) {
  const missing = engine.needs.filter(([path]) => !existsSync(path));
  if (missing.length) {
    const list = missing.map(([path, from]) => `${path} (${from})`).join(", ");
    throw new Error(`${engine.name} cannot run: missing ${list}. Install with: ${SETUP}`);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The last lines of a log file, for an error message. */
function tail(path, lines = 15) {
  try {
    return readFileSync(path, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/** Resolves when `child` exits; rejects if it does not within `ms`. */
function exited(child, ms = 5_000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve();
    }, ms);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Starts an X server on a display it picks itself (-displayfd), rather than xvfb-run -a,
 * whose guess of a free display races with any other Xvfb started at the same moment.
 */
function startXvfb(log) {
  const xvfb = spawn("/usr/bin/Xvfb", ["-displayfd", "3", "-nolisten", "tcp", "-screen", "0", "1280x1024x24"], {
    stdio: ["ignore", log, log, "pipe"],
  });
  const display = new Promise((resolve, reject) => {
    let text = "";
    xvfb.stdio[3].on("data", (chunk) => {
      text += chunk;
      if (text.includes("\n")) resolve(`:${text.trim()}`);
    });
    xvfb.once("exit", (code) => reject(new Error(`Xvfb exited (${code}) before it chose a display`)));
    xvfb.once("error", reject);
  });
  return { xvfb, display };
}

/** Polls the driver's /status until it accepts sessions. */
async function whenListening(url, child, logPath, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`the driver exited with ${child.exitCode}:\n${tail(logPath)}`);
    }
    try {
      const response = await fetch(`${url}/status`);
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the driver did not answer on ${url} within ${ms} ms:\n${tail(logPath)}`);
}

/**
 * Starts `engine`'s driver (and an X server if it needs one) and a session in it. The
 * driver's and browser's output goes to `logPath`. Returns `{ driver, capabilities, close }`;
 * `close()` ends the session and stops every process started here, by its pid.
 */
export async function launch(engine, logPath) {
  assertInstalled(engine);
  const log = openSync(logPath, "w");
  const children = [];
  const close = async () => {
    for (const child of children.reverse()) {
      child.kill("SIGTERM");
      await exited(child);
    }
  };
  try {
    const env = { ...process.env };
    if (engine.display) {
      const { xvfb, display } = startXvfb(log);
      children.push(xvfb);
      env.DISPLAY = await display;
    }
    const port = await freePort();
    const [command, args] = engine.driver(port);
    const child = spawn(command, args, { stdio: ["ignore", log, log], env });
    children.push(child);
    const url = `http://127.0.0.1:${port}`;
    await whenListening(url, child, logPath);
    const driver = await WebDriver.createSession(new Executor(new HttpClient(url)), engine.capabilities());
    const capabilities = await driver.getCapabilities();
    return {
      driver,
      capabilities: {
        browserName: capabilities.get("browserName"),
        browserVersion: capabilities.get("browserVersion"),
        platformName: capabilities.get("platformName"),
        driver: engine.driverVersion(capabilities),
      },
      close: async () => {
        await driver.quit().catch(() => {});
        await close();
      },
    };
  } catch (error) {
    await close();
    error.message += `\n(${engine.name}'s log: ${logPath})`;
    throw error;
  }
}
