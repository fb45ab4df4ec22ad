// Drives `session serve` with OpenCode's v1 SDK client (@opencode-ai/sdk, createOpencodeClient
// from the package root): creates a session, sends a prompt the scripted provider answers
// with a tool call that needs permission, answers the ask from the event stream, and checks
// the reply, the stored messages and the events. Prints a JSON summary; exits 1 on failure.
//
// Environment: SESSION_URL (the server), PROJECT_DIR (the project it serves), SESSION_TOKEN
// (the server's token, sent as OpenCode's own clients send OPENCODE_SERVER_PASSWORD: Basic
// authentication with the user name "opencode").

import { createOpencodeClient } from "@opencode-ai/sdk";

const baseUrl = process.env.SESSION_URL;
const directory = process.env.PROJECT_DIR;
const token = process.env.SESSION_TOKEN;
if (!baseUrl || !directory || !token) {
  console.error("SESSION_URL, PROJECT_DIR and SESSION_TOKEN must be set");
  process.exit(2);
}

function check(condition, message, detail) {
  if (!condition) {
    throw new Error(`${message}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
}

function withTimeout(promise, what, ms = 60000) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
  // Without the token the server (started with --require-token) answers 401.
  const anonymous = createOpencodeClient({ baseUrl, directory });
  const refused = await anonymous.session.list();
  check(refused.response.status === 401, "no token is 401", refused.response.status);
  check(refused.error && refused.error.name === "Unauthorized", "Unauthorized body", refused.error);

  const authorization = `Basic ${Buffer.from(`opencode:${token}`).toString("base64")}`;
  const client = createOpencodeClient({ baseUrl, directory, headers: { Authorization: authorization } });

  // The event stream: every event is kept; waiters resolve on the first match.
  const seen = [];
  const waiters = [];
  const subscription = await client.event.subscribe();
  const pump = (async () => {
    for await (const event of subscription.stream) {
      seen.push(event);
      for (const waiter of [...waiters]) {
        if (waiter.match(event)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(event);
        }
      }
    }
  })();
  const waitFor = (what, match) => {
    const found = seen.find(match);
    if (found) return Promise.resolve(found);
    return withTimeout(new Promise((resolve) => waiters.push({ match, resolve })), what);
  };
  await waitFor("server.connected", (e) => e.type === "server.connected");

  const created = await client.session.create({ body: { title: "from the sdk" }, throwOnError: true });
  const session = created.data;
  check(session.id.startsWith("ses_"), "session id", session);
  check(session.title === "from the sdk", "session title", session);

  const listed = await client.session.list({ throwOnError: true });
  check(listed.data.some((s) => s.id === session.id), "the new session is listed", listed.data);
  const got = await client.session.get({ path: { id: session.id }, throwOnError: true });
  check(got.data.id === session.id, "session.get", got.data);

  // Answer the permission ask as soon as it is published.
  const answered = waitFor("permission.asked", (e) => e.type === "permission.asked" && e.properties.sessionID === session.id)
    .then(async (event) => {
      const reply = await client.postSessionIdPermissionsPermissionId({
        path: { id: session.id, permissionID: event.properties.id },
        body: { response: "once" },
        throwOnError: true,
      });
      check(reply.data === true, "permission reply answers true", reply.data);
      return event.properties;
    });

  const prompted = await withTimeout(
    client.session.prompt({
      path: { id: session.id },
      body: {
        parts: [{ type: "text", text: "What is in the env file?" }],
        model: { providerID: "mock", modelID: "m" },
      },
      throwOnError: true,
    }),
    "the prompt",
  );
  const permission = await answered;
  const { info, parts } = prompted.data;
  check(info.role === "assistant", "the reply is an assistant message", info);
  check(info.sessionID === session.id, "the reply's session", info);
  const text = parts.filter((p) => p.type === "text").map((p) => p.text).join("");
  check(text === "The env file sets SECRET.", "the reply's text", parts);

  const messages = await client.session.messages({ path: { id: session.id }, throwOnError: true });
  const roles = messages.data.map((m) => m.info.role);
  check(JSON.stringify(roles) === JSON.stringify(["user", "assistant", "assistant"]), "stored: the prompt, the tool step, the answer", roles);
  const tool = messages.data.flatMap((m) => m.parts).find((p) => p.type === "tool");
  check(tool && tool.state.status === "completed", "the tool ran after the reply", tool);
  check(tool.state.output.includes("SECRET=1"), "the tool read the file", tool.state);

  await waitFor("session.idle", (e) => e.type === "session.idle" && e.properties.sessionID === session.id);
  await waitFor("permission.replied", (e) => e.type === "permission.replied" && e.properties.requestID === permission.id && e.properties.reply === "once");
  const types = [...new Set(seen.map((e) => e.type))];
  for (const wanted of ["server.connected", "session.created", "session.status", "message.updated", "message.part.updated", "message.part.delta", "permission.asked", "permission.replied", "session.idle"]) {
    check(types.includes(wanted), `the stream carried ${wanted}`, types);
  }
  // OpenCode 1.18's shapes: every event has an id, and text grows by message.part.delta.
  check(seen.every((e) => typeof e.id === "string" && e.id.startsWith("evt_")), "every event has an evt_ id", seen.slice(0, 3));
  const streamed = seen.some((e) => e.type === "message.part.delta" && e.properties.sessionID === session.id && e.properties.field === "text" && typeof e.properties.delta === "string");
  check(streamed, "text streamed as message.part.delta", types);
  const updated = seen.find((e) => e.type === "message.part.updated" && e.properties.part.sessionID === session.id);
  check(updated && updated.properties.sessionID === session.id && typeof updated.properties.time === "number", "message.part.updated carries sessionID and time", updated);

  const aborted = await client.session.abort({ path: { id: session.id }, throwOnError: true });
  check(aborted.data === true, "abort answers true", aborted.data);

  // An unknown session answers 404 with OpenCode's error shape.
  const missing = await client.session.get({ path: { id: "ses_0000000000000000000000unknown" } });
  check(missing.response.status === 404, "unknown session is 404", missing.response.status);
  check(missing.error && missing.error.name === "NotFoundError", "NotFoundError body", missing.error);

  const deleted = await client.session.delete({ path: { id: session.id }, throwOnError: true });
  check(deleted.data === true, "delete answers true", deleted.data);
  await waitFor("session.deleted", (e) => e.type === "session.deleted" && e.properties.info.id === session.id);

  console.log(JSON.stringify({ ok: true, session: session.id, permission: permission.permission, text, events: types }));
  // The event stream never ends by itself.
  process.exit(0);
  await pump;
}

main().catch((error) => {
  console.error(`sdk e2e failed: ${error.stack || error}`);
  process.exit(1);
});
