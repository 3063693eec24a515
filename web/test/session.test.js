// ChatSession against a fake mqtt.js: what it publishes and subscribes, its reconnect backoff, and dedup.
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { test } from "node:test";

import { decodeEnvelope, encodeEnvelope, StatusState } from "../envelope.js";
import { EnvelopeFactory } from "../outbound.js";
import { backoffSeconds, ChatSession } from "../session.js";

class FakeClient extends EventEmitter {
  constructor(options) { super(); this.options = options; this.published = []; this.subscribed = []; this.ended = null; }
  publish(topic, payload, opts, cb) { this.published.push({ topic, payload, ...opts }); cb?.(); }
  subscribe(filters, cb) {
    this.subscribed.push(filters);
    cb(null, Object.entries(filters).map(([topic, { qos }]) => ({ topic, qos })));
  }
  unsubscribe(topics, cb) { cb(); }
  end(force, opts, cb) { this.ended = force; cb?.(); }
}

function harness() {
  const clients = [];
  const timers = [];
  const intervals = [];
  const events = [];
  const clock = { now: 1_000_000 };
  const fakeTimers = {
    setTimeout: (fn, ms) => { timers.push({ fn, ms }); return timers.length; },
    clearTimeout: () => {},
    setInterval: (fn, ms) => { intervals.push({ fn, ms }); return intervals.length; },
    clearInterval: () => {},
  };
  const mqtt = { connect: (url, options) => { const c = new FakeClient(options); clients.push(c); return c; } };
  const session = new ChatSession({
    mqtt, url: "ws://x/mqtt", userId: "alice", profile: { name: "Alice" }, onEvent: (e) => events.push(e), timers: fakeTimers,
    now: () => clock.now, random: () => 0.5,
  });
  return { session, clients, timers, intervals, events, clock };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test("backoff: 1, 2, 4 ... 64 s, then 64 s", () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7, 20].map(backoffSeconds), [1, 2, 4, 8, 16, 32, 64, 64, 64]);
});

test("connect: client id, no mqtt.js reconnects, the offline will; then subscriptions, ONLINE and the join", async () => {
  const { session, clients } = harness();
  session.start("lobby");
  const c = clients[0];
  assert.equal(c.options.clientId, "alice");
  assert.equal(c.options.reconnectPeriod, 0);
  assert.deepEqual([c.options.will.topic, c.options.will.qos, c.options.will.retain], ["mqttchat/users/alice/status", 1, true]);
  const will = decodeEnvelope(c.options.will.payload);
  assert.deepEqual([will.status.state, will.status.sessionId], [StatusState.OFFLINE, session.session]);
  c.emit("connect");
  await settle();
  assert.deepEqual(c.subscribed, [
    { "mqttchat/users/+/status": { qos: 1 }, "mqttchat/users/alice/inbox": { qos: 1 } },
    { "mqttchat/rooms/lobby/messages": { qos: 2 }, "mqttchat/rooms/lobby/members/+": { qos: 1 } },
  ]);
  assert.deepEqual(c.published.map((p) => [p.topic, p.qos, p.retain]), [
    ["mqttchat/users/alice/status", 1, true],
    ["mqttchat/rooms/lobby/members/alice", 1, true],
    ["mqttchat/rooms/lobby/messages", 1, false],
  ]);
  assert.equal(decodeEnvelope(c.published[0].payload).status.state, StatusState.ONLINE);
  assert.equal(decodeEnvelope(c.published[1].payload).join.sessionId, session.session);
  const gift = await session.sendGift("rose", 2);
  assert.equal(c.published.at(-1).qos, 2);
  assert.equal(gift.direction, "sent");
  await session.sendText("hi");
  assert.equal(c.published.at(-1).qos, 1);
});

test("reconnects back off, reset after a success, keep the session, and stop after quit", async () => {
  const { session, clients, timers } = harness();
  session.start("lobby");
  clients[0].emit("connect");
  await settle();
  clients[0].emit("close");
  clients[0].emit("close"); // mqtt.js may report more than once: counted once
  timers.at(-1).fn();
  clients[1].emit("close");
  timers.at(-1).fn();
  assert.deepEqual(timers.map((t) => t.ms), [1000, 2000]);
  clients[2].emit("connect");
  await settle();
  const republished = clients[2].published.map((p) => [p.topic, p.qos]);
  assert.deepEqual(republished, [["mqttchat/users/alice/status", 1], ["mqttchat/rooms/lobby/members/alice", 1],
    ["mqttchat/rooms/lobby/messages", 0]]); // no second JOIN: a heartbeat says we are back
  assert.equal(decodeEnvelope(clients[2].published[2].payload).heartbeat.sessionId, session.session);
  clients[2].emit("close");
  assert.equal(timers.at(-1).ms, 1000);
  timers.at(-1).fn();
  clients[3].emit("connect");
  await settle();
  await session.quit();
  assert.equal(clients[3].ended, false); // a DISCONNECT, so the broker does not publish the will
  const last = clients[3].published.slice(-3).map((p) => [p.topic, p.payload.length === 0]);
  assert.deepEqual(last, [["mqttchat/rooms/lobby/messages", false], ["mqttchat/rooms/lobby/members/alice", true],
    ["mqttchat/users/alice/status", false]]);
  const count = timers.length;
  clients[3].emit("close");
  assert.equal(timers.length, count);
  assert.equal(clients.length, 4);
});

test("a refused login (CONNACK 4 or 5) asks for credentials instead of retrying", () => {
  const { session, clients, timers, events } = harness();
  session.start("lobby");
  const error = new Error("Connection refused: Not authorized");
  error.code = 5;
  clients[0].emit("error", error);
  clients[0].emit("close");
  assert.deepEqual(events.filter((e) => e.type === "auth"), [{ type: "auth", code: 5 }]);
  assert.equal(timers.length, 0);
});

test("a message delivered twice is shown once; members follow presence", async () => {
  const { session, clients, events } = harness();
  session.start("lobby");
  clients[0].emit("connect");
  await settle();
  const bob = new EnvelopeFactory("bob", { name: "Bob" }, "B");
  const text = encodeEnvelope(bob.text("hello", "lobby"));
  clients[0].emit("message", "mqttchat/rooms/lobby/messages", text);
  clients[0].emit("message", "mqttchat/rooms/lobby/messages", text);
  assert.equal(events.filter((e) => e.type === "message").length, 1);
  clients[0].emit("message", "mqttchat/rooms/lobby/members/bob", encodeEnvelope(bob.join("lobby")));
  clients[0].emit("message", "mqttchat/users/bob/status", encodeEnvelope(bob.status(true)));
  assert.deepEqual(session.members().map((m) => m.id), ["alice", "bob"]); // we are here too, without any echo
  clients[0].emit("message", "mqttchat/users/bob/status", encodeEnvelope(bob.status(false)));
  assert.deepEqual(session.members().map((m) => m.id), ["alice"]);
  const bobChanges = events.filter((e) => e.type === "presence" && e.change.member.id === "bob");
  assert.equal(bobChanges.map((e) => e.change.kind).join(), "present,offline");
});

test("presence by heartbeat: heartbeats with session and interval, who-is-here answered, silent members dropped",
  async () => {
    const { session, clients, timers, intervals, events, clock } = harness();
    session.start("lobby");
    const c = clients[0];
    c.emit("connect");
    await settle();
    const [tick, sweep] = intervals.slice(-2);
    assert.deepEqual([tick.ms, sweep.ms], [3000, 750]);
    tick.fn();
    const heartbeat = decodeEnvelope(c.published.at(-1).payload);
    assert.equal(c.published.at(-1).qos, 0);
    assert.deepEqual([heartbeat.heartbeat.sessionId, heartbeat.heartbeat.intervalMs], [session.session, 3000]);
    assert.equal(heartbeat.heartbeat.user.name, "Alice");

    // Bob joins (no retained message at all, as on a cluster node): present at once, and his JOIN is answered in
    // the room after a random delay of up to half an interval.
    const bob = new EnvelopeFactory("bob", { name: "Bob" }, "B");
    const count = c.published.length;
    c.emit("message", "mqttchat/rooms/lobby/messages", encodeEnvelope(bob.join("lobby")));
    assert.deepEqual(session.members().map((m) => m.id), ["alice", "bob"]);
    assert.equal(c.published.length, count);
    assert.equal(timers.at(-1).ms, 750); // random 0.5 x half of 3 s
    timers.at(-1).fn();
    assert.equal(decodeEnvelope(c.published.at(-1).payload).type, 8);

    // Carol is heard only by heartbeat, announcing 6 s: dropped after 18 s of silence, not before.
    const carol = new EnvelopeFactory("carol", { name: "Carol" }, "C");
    c.emit("message", "mqttchat/rooms/lobby/messages", encodeEnvelope(carol.heartbeat(1n, "lobby", 6000)));
    assert.ok(session.members().some((m) => m.id === "carol"));
    clock.now += 9_000;
    tick.fn(); // our own heartbeat keeps us present (without any echo from the broker)
    sweep.fn();
    assert.deepEqual(session.members().map((m) => m.id), ["alice", "carol"]); // bob: default 3 s x 3 passed
    clock.now += 9_000;
    tick.fn();
    sweep.fn();
    assert.deepEqual(session.members().map((m) => m.id), ["alice"]);
    const dropped = events.filter((e) => e.type === "presence" && e.change.kind === "timedOut").map((e) => e.change.member.id);
    assert.deepEqual(dropped, ["bob", "carol"]);
  });
