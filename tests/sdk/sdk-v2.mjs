// Drives `session serve` with OpenCode's v2 SDK client (@opencode-ai/sdk/v2) through every
// route OpenCode 1.18's terminal UI reads at start-up and on its first prompt, in the UI's
// order. Prints one JSON line: every call as {method, path (the OpenAPI template), status,
// body}, which tests/suite/serve_sdk.rs checks against OpenCode's own OpenAPI schemas.
//
// Environment: SESSION_URL, PROJECT_DIR, SESSION_TOKEN (sent as OpenCode's clients send
// OPENCODE_SERVER_PASSWORD: Basic authentication with the user name "opencode").

import { createOpencodeClient } from "@opencode-ai/sdk/v2";

const baseUrl = process.env.SESSION_URL;
const directory = process.env.PROJECT_DIR;
const token = process.env.SESSION_TOKEN;
if (!baseUrl || !directory || !token) {
  console.error("SESSION_URL, PROJECT_DIR and SESSION_TOKEN must be set");
  process.exit(2);
}

const authorization = `Basic ${Buffer.from(`opencode:${token}`).toString("base64")}`;
const client = createOpencodeClient({ baseUrl, directory, headers: { Authorization: authorization } });
const calls = [];

// Runs one SDK call and records its answer under the route it is.
async function call(method, path, run) {
  const result = await run();
  const status = result.response ? result.response.status : 0;
  calls.push({ method, path, status, body: result.data === undefined ? result.error ?? null : result.data });
  if (status !== 200) {
    throw new Error(`${method.toUpperCase()} ${path} answered ${status}: ${JSON.stringify(result.error)}`);
  }
  return result.data;
}

async function main() {
  // Start-up, in the order the terminal UI makes these reads.
  await call("get", "/path", () => client.path.get());
  const project = await call("get", "/project/current", () => client.project.current());
  await call("get", "/config/providers", () => client.config.providers());
  await call("get", "/experimental/capabilities", () => client.experimental.capabilities.get());
  await call("get", "/experimental/console", () => client.experimental.console.get());
  await call("get", "/project/{projectID}/directories", () => client.project.directories({ projectID: project.id }));
  const providers = await call("get", "/provider", () => client.provider.list());
  await call("get", "/session", () => client.session.list());
  await call("get", "/config", () => client.config.get());
  await call("get", "/agent", () => client.app.agents());
  await call("get", "/lsp", () => client.lsp.status());
  await call("get", "/mcp", () => client.mcp.status());
  await call("get", "/command", () => client.command.list());
  await call("get", "/experimental/resource", () => client.experimental.resource.list());
  await call("get", "/formatter", () => client.formatter.status());
  await call("get", "/session/status", () => client.session.status());
  await call("get", "/experimental/workspace", () => client.experimental.workspace.list());
  await call("get", "/experimental/workspace/status", () => client.experimental.workspace.status());
  await call("get", "/vcs", () => client.vcs.get());
  await call("get", "/provider/auth", () => client.provider.auth());
  await call("get", "/api/location", () => client.v2.location.get());
  await call("get", "/api/command", () => client.v2.command.list());
  await call("get", "/api/integration", () => client.v2.integration.list());
  await call("get", "/api/provider", () => client.v2.provider.list());
  await call("get", "/api/reference", () => client.v2.reference.list());
  await call("get", "/api/model", () => client.v2.model.list());
  await call("get", "/api/agent", () => client.v2.agent.list());
  await call("get", "/api/skill", () => client.v2.skill.list());
  await call("get", "/question", () => client.question.list());
  await call("get", "/permission", () => client.permission.list());
  await call("get", "/project", () => client.project.list());
  await call("get", "/file", () => client.file.list({ path: "" }));
  await call("get", "/file/content", () => client.file.read({ path: "README.md" }));
  await call("get", "/file/status", () => client.file.status());
  await call("get", "/find/file", () => client.find.files({ query: "read" }));
  await call("get", "/find", () => client.find.text({ pattern: "app" }));
  await call("get", "/find/symbol", () => client.find.symbols({ query: "main" }));

  // The first prompt, as the UI sends it: a session with the agent and model, its reads,
  // then the prompt itself (answered once the run ends).
  const model = providers.default.mock;
  const session = await call("post", "/session", () =>
    client.session.create({ agent: "build", model: { providerID: "mock", id: model } }),
  );
  await call("get", "/session/{sessionID}", () => client.session.get({ sessionID: session.id }));
  await call("get", "/session/{sessionID}/message", () => client.session.messages({ sessionID: session.id }));
  await call("get", "/session/{sessionID}/todo", () => client.session.todo({ sessionID: session.id }));
  await call("get", "/session/{sessionID}/diff", () => client.session.diff({ sessionID: session.id }));
  const reply = await call("post", "/session/{sessionID}/message", () =>
    client.session.prompt({
      sessionID: session.id,
      agent: "build",
      model: { providerID: "mock", modelID: model },
      parts: [{ type: "text", text: "Read the readme" }],
    }),
  );
  await call("get", "/session/{sessionID}/message/{messageID}", () =>
    client.session.message({ sessionID: session.id, messageID: reply.info.id }),
  );
  await call("get", "/session/{sessionID}/children", () => client.session.children({ sessionID: session.id }));
  await call("post", "/session/{sessionID}/fork", () => client.session.fork({ sessionID: session.id }));
  await call("patch", "/session/{sessionID}", () => client.session.update({ sessionID: session.id, title: "Renamed" }));
  await call("get", "/session/{sessionID}", () => client.session.get({ sessionID: session.id }));
  console.log(JSON.stringify({ ok: true, calls }));
}

main().catch((error) => {
  console.log(JSON.stringify({ ok: false, error: String(error && error.stack ? error.stack : error), calls }));
  process.exit(1);
});
