// The page: forms, the log, the member and online lists, wired to one ChatSession (session.js).
// Everything a user or a broker sent is shown with textContent, never innerHTML: a name or a line `<script>` is text.

import { HELP, parseInput } from "./commands.js";
import { isValidName, nameProblem } from "./inbound.js";
import { ChatSession } from "./session.js";

const $ = (id) => document.getElementById(id);
const MAX_LOG_LINES = 2000;
const params = new URLSearchParams(location.search);
let session = null;

/** The broker: ?broker=URL, else MQTT over WebSockets on the page's own host (the broker serves both). */
function brokerURL() {
  if (params.get("broker")) return params.get("broker");
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/mqtt`;
}

/** The member's name, with its id when the two differ (the id is what /dm needs), as the terminal chat shows it. */
function display(member) {
  const name = member.profile?.name ?? "";
  return name === "" || name === member.id ? member.id : `${name} [${member.id}]`;
}

const pad = (n) => String(n).padStart(2, "0");
function clock(ms) {
  const d = new Date(ms);
  return `[${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}]`;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Appends a line to the log: parts are [className, text] pairs, each shown as text. */
function logLine(kind, parts, ms = Date.now()) {
  const log = $("log");
  const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  const li = el("li");
  li.dataset.kind = kind;
  li.append(el("span", "time", `${clock(ms)} `));
  for (const [className, text] of parts) li.append(el("span", className, text));
  log.append(li);
  while (log.childElementCount > MAX_LOG_LINES) log.firstElementChild.remove();
  if (stick) log.scrollTop = log.scrollHeight;
}
const system = (text) => logLine("system", [["content", `* ${text}`]]);

function showRecord(record) {
  const sender = display(record.sender);
  const content = record.content.gift
    ? `sent a gift: ${record.content.gift.name} x${record.content.gift.count}` : record.content.text;
  if (record.conversation.peer === undefined) {
    logLine(record.content.gift ? "gift" : "text", [["sender", sender], ["sep", ": "], ["content", content]],
      record.sentAtMs);
  } else if (record.direction === "received") {
    logLine("dm", [["sep", "(dm from "], ["sender", sender], ["sep", ") "], ["content", content]], record.sentAtMs);
  } else {
    logLine("dm", [["sep", "(dm to "], ["sender", record.conversation.peer], ["sep", ") "], ["content", content]],
      record.sentAtMs);
  }
}

function showPresence(change) {
  if (change.member.id === session.userId) return;
  const what = {
    present: "is here", left: "left", offline: "went offline", timedOut: "went offline (no heartbeat)",
  }[change.kind];
  logLine("presence", [["content", `* ${display(change.member)} ${what}`]]);
}

function renderList(list, members) {
  list.replaceChildren(...members.map((member) => {
    const li = el("li", member.id === session.userId ? "me" : "", display(member));
    li.dataset.id = member.id;
    li.title = `/dm ${member.id}`;
    return li;
  }));
}

function renderMembers() {
  renderList($("members"), session.members());
  renderList($("online"), session.onlineUsers());
  $("room-title").textContent = session.room ? `#${session.room}` : "(not in a room)";
}

function setConnection(state, text) {
  $("connection").dataset.state = state;
  $("connection").textContent = text;
}

function onEvent(event) {
  switch (event.type) {
    case "connection":
      if (event.state === "connected") {
        setConnection("connected", `connected as ${display({ id: session.userId, profile: session.profile })}`);
        if (event.again) system("reconnected");
        else if (session.room) system(`joined #${session.room} as ${display({ id: session.userId, profile: session.profile })} (/help lists the commands)`);
        renderMembers();
      } else if (event.state === "reconnecting" && event.delay !== undefined) {
        setConnection("reconnecting", `connection lost, reconnecting in ${event.delay} s`);
        if (session.everConnected) system(`connection lost, reconnecting in ${event.delay} s`);
      } else if (event.state === "closed") {
        setConnection("idle", "not connected");
        // Disconnected on purpose: nothing more is learnt, so lists would only go stale; the log stays readable.
        $("members").replaceChildren();
        $("online").replaceChildren();
      } else {
        setConnection(event.state, `${event.state}…`);
      }
      return;
    case "auth":
      showLogin(event.code);
      return;
    case "message":
      showRecord(event.record);
      return;
    case "presence":
      showPresence(event.change);
      return;
    case "members":
      renderMembers();
      return;
    case "error":
      if (session.everConnected) system(event.message);
      else $("join-error").textContent = event.message;
      return;
  }
}

// ------------------------------------------------------------------------------------------------ forms

function startSession({ room, name, id, username, password }) {
  const userId = id || name;
  const problems = [["room", room], ["user id", userId]]
    .map(([what, value]) => (nameProblem(value) ? `${what} ${JSON.stringify(value)} ${nameProblem(value)}` : null))
    .filter(Boolean);
  if (problems.length) {
    $("join-error").textContent = problems.join("\n");
    return;
  }
  if (!globalThis.mqtt) {
    $("join-error").textContent = "vendor/mqtt.bundle.js is missing: run scripts/setup.sh to build it";
    return;
  }
  $("join-error").textContent = "";
  $("join-form").hidden = true;
  $("login-form").hidden = true;
  $("chat").hidden = false;
  document.title = `#${room} — mqttchat`;
  session = new ChatSession({
    mqtt: globalThis.mqtt, url: brokerURL(), userId, profile: { name, level: 0, iconUrl: "" }, username, password, onEvent,
  });
  globalThis.chatSession = session; // for debugging from the console
  session.start(room);
  $("message").focus();
}

function showLogin(code) {
  $("chat").hidden = true;
  $("login-form").hidden = false;
  setConnection("login", "login needed");
  $("login-reason").textContent = code === 4
    ? "The broker refused this user name or password." : "The broker needs a user name and password (not authorised).";
  if (!$("login-user").value) $("login-user").value = session.userId;
  $("login-password").focus();
}

$("join-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const wanted = { room: $("join-room").value, name: $("join-name").value, id: $("join-id").value.trim() };
  const userId = wanted.id || wanted.name;
  if (session?.connected && session.userId === userId && session.profile.name === wanted.name) {
    // Still connected after /leave: join on the same connection (a second one would take over this client id).
    const problem = nameProblem(wanted.room);
    if (problem) return void ($("join-error").textContent = `room ${JSON.stringify(wanted.room)} ${problem}`);
    $("join-form").hidden = true;
    return run(async () => {
      await session.join(wanted.room);
      system(`joined #${wanted.room} as ${display({ id: session.userId, profile: session.profile })}`);
      renderMembers();
    });
  }
  if (session && !session.stopped) await session.quit();
  startSession(wanted);
});

$("login-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const previous = session;
  startSession({
    room: previous.room ?? previous.pendingRoom, name: previous.profile.name, id: previous.userId,
    username: $("login-user").value, password: $("login-password").value,
  });
});

async function run(action) {
  try { await action(); } catch (error) { system(error.message); }
}

async function handleLine(line) {
  const command = parseInput(line);
  switch (command.kind) {
    case "nothing": return;
    case "invalid": return system(command.message);
    case "help": return system(HELP);
    case "text": return run(async () => showRecord(await session.sendText(command.text)));
    case "gift": return run(async () => showRecord(await session.sendGift(command.name, command.count)));
    case "direct":
      if (!isValidName(command.user)) return system(`/dm: '${command.user}' is not a valid user id`);
      return run(async () => showRecord(await session.sendDirect(command.text, command.user)));
    case "members":
      return system(`members of #${session.room}: ${session.members().map(display).join(", ") || "(none)"}`);
    case "leave": return leaveRoom();
    case "quit": return quit();
  }
}

function leaveRoom() {
  const room = session.room;
  return run(async () => {
    await session.leave();
    if (room) system(`you left #${room}; /quit disconnects, the join form joins another room`);
    $("join-form").hidden = false;
    $("join-name").value = session.profile.name;
    $("join-id").value = session.userId;
  });
}

async function quit() {
  await session.quit();
  system("disconnected");
  $("join-form").hidden = false;
}

$("send-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const line = $("message").value;
  $("message").value = "";
  handleLine(line);
});

$("gift-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const count = Number($("gift-count").value);
  run(async () => showRecord(await session.sendGift($("gift-name").value.trim(), count)));
});

for (const list of [$("members"), $("online")]) {
  list.addEventListener("click", (e) => {
    const id = e.target.closest("li")?.dataset.id;
    if (!id) return;
    $("message").value = `/dm ${id} `;
    $("message").focus();
  });
}

$("leave-button").addEventListener("click", leaveRoom);
$("quit-button").addEventListener("click", quit);

// Closing the tab: say goodbye if we can; if the socket is gone first, the broker publishes our will instead.
addEventListener("pagehide", () => { if (session && !session.stopped) session.quit(); });

// ?room=R&name=N[&id=ID] fills the form in and joins at once, so a link can be shared (and a test can open it).
$("join-room").value = params.get("room") ?? "";
$("join-name").value = params.get("name") ?? "";
$("join-id").value = params.get("id") ?? "";
if (params.get("room") && params.get("name")) {
  startSession({ room: params.get("room"), name: params.get("name"), id: params.get("id") ?? "" });
}
